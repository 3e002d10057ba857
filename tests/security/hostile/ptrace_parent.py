# expect: errno EPERM
# ptrace of the parent and of pid 1 (the sandbox's supervisor chain), and
# process_vm_readv of them.
import ctypes
import errno
import os

libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH, PTRACE_SEIZE, PTRACE_TRACEME = 16, 0x4206, 0
for pid in [os.getppid(), 1, 0]:
    for req in (PTRACE_ATTACH, PTRACE_SEIZE):
        r = libc.ptrace(req, pid, None, None)
        print("ptrace", req, pid, r, errno.errorcode.get(ctypes.get_errno(), ""))
r = libc.ptrace(PTRACE_TRACEME, 0, None, None)
print("traceme", r, errno.errorcode.get(ctypes.get_errno(), ""))
for pid in [os.getppid(), 1]:
    try:
        with open(f"/proc/{pid}/mem", "rb") as f:
            print("mem of", pid, "opened")
    except OSError as e:
        print("mem of", pid, errno.errorcode.get(e.errno, e))
