# expect: errno EPERM
# Becoming root: setuid(0), setresuid, capset with every capability, su/sudo.
import ctypes
import errno
import os
import subprocess

for name, fn in [("setuid", lambda: os.setuid(0)), ("setresuid", lambda: os.setresuid(0, 0, 0)),
                 ("setgid", lambda: os.setgid(0)), ("setgroups", lambda: os.setgroups([0]))]:
    try:
        fn()
        print(name, "ok", os.getuid())
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e))
libc = ctypes.CDLL(None, use_errno=True)
header = (ctypes.c_uint32 * 2)(0x20080522, 0)
data = (ctypes.c_uint32 * 6)(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff)
r = libc.capset(header, data)
print("capset", r, errno.errorcode.get(ctypes.get_errno(), ""))
for cmd in (["su", "-c", "id"], ["sudo", "id"]):
    try:
        print(cmd, subprocess.run(cmd, capture_output=True, text=True, timeout=3, input=""))
    except (OSError, subprocess.TimeoutExpired) as e:
        print(cmd, e)
