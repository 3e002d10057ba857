# expect: contained
# bpf(2): map creation and program load through a raw syscall.
import ctypes
import errno

libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(128)
ctypes.memmove(attr, (ctypes.c_uint32 * 4)(2, 4, 4, 16), 16)  # ARRAY map
r = libc.syscall(321, 0, attr, 128)
print("bpf MAP_CREATE", r, errno.errorcode.get(ctypes.get_errno(), ""))
if r >= 0:
    print("ESCAPED: bpf is available to the guest")
