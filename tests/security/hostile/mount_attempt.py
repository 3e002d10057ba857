# expect: errno EPERM
# mount(2) through ctypes: tmpfs over /tmp, a bind of / and a new procfs.
import ctypes
import errno
import subprocess

libc = ctypes.CDLL(None, use_errno=True)
for src, target, fstype, flags in [(b"none", b"/tmp", b"tmpfs", 0), (b"/", b"/tmp", None, 4096),
                                   (b"proc", b"/proc", b"proc", 0),
                                   (b"/dev/sda1", b"/mnt", b"ext4", 0)]:
    r = libc.mount(src, target, fstype, flags, None)
    print("mount", src, target, r, errno.errorcode.get(ctypes.get_errno(), ""))
r = libc.umount2(b"/proc", 2)
print("umount /proc", r, errno.errorcode.get(ctypes.get_errno(), ""))
print(subprocess.run(["mount", "-t", "tmpfs", "none", "/tmp"], capture_output=True, text=True))
