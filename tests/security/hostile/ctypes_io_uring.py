# expect: contained
# io_uring (a well-known source of kernel escapes): io_uring_setup through a
# raw syscall; it must fail (it would bypass the syscall wall).
import ctypes
import errno

libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
r = libc.syscall(425, 8, params)
e = ctypes.get_errno()
print("io_uring_setup", r, errno.errorcode.get(e, e))
if r >= 0:
    print("ESCAPED: io_uring is available to the guest")
