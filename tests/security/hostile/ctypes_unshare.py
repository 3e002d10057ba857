# expect: contained
# New namespaces from inside: unshare and clone with CLONE_NEWUSER etc., then
# setns into /proc/1/ns/* (to reach the sentry's namespaces).
import ctypes
import errno
import os

libc = ctypes.CDLL(None, use_errno=True)
for name, flags in [("user", 0x10000000), ("mnt", 0x00020000), ("net", 0x40000000),
                    ("pid", 0x20000000), ("user+mnt", 0x10020000), ("cgroup", 0x02000000)]:
    r = libc.unshare(flags)
    print("unshare", name, r, errno.errorcode.get(ctypes.get_errno(), ""))
for ns in ["mnt", "net", "pid", "user"]:
    for pid in ["1", "self"]:
        try:
            fd = os.open(f"/proc/{pid}/ns/{ns}", os.O_RDONLY)
            r = libc.setns(fd, 0)
            print("setns", pid, ns, r, errno.errorcode.get(ctypes.get_errno(), ""))
        except OSError as e:
            print("open ns", pid, ns, errno.errorcode.get(e.errno, e))
