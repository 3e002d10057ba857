# expect: errno EPERM
# Global host state: set the clock (to now: harmless if it got through),
# sethostname, and reboot(2) with CAD_OFF (changes only what Ctrl-Alt-Del does).
import ctypes
import errno
import socket
import time

libc = ctypes.CDLL(None, use_errno=True)


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


r = libc.clock_settime(0, ctypes.byref(Timespec(int(time.time()), 0)))
print("clock_settime", r, errno.errorcode.get(ctypes.get_errno(), ""))
try:
    socket.sethostname("pwned")
    print("sethostname ok (the sandbox's own uts namespace):", socket.gethostname())
except OSError as e:
    print("sethostname", errno.errorcode.get(e.errno, e))
r = libc.syscall(169, ctypes.c_uint(0xfee1dead), 672274793, 0, None)  # reboot(LINUX_REBOOT_CMD_CAD_OFF)
print("reboot", r, errno.errorcode.get(ctypes.get_errno(), ""))
