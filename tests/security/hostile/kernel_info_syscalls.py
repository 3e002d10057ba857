# expect: contained
# Syscalls that read or change kernel state: perf_event_open, keyctl (the
# session keyring), userfaultfd, kexec_load, swapoff, acct, syslog (dmesg).
import ctypes
import errno

libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(128)
for name, args in [("perf_event_open", (298, attr, 0, -1, -1, 0)),
                   ("keyctl GET_KEYRING_ID", (250, 0, -3, 0)),
                   ("userfaultfd", (323, 0)),
                   ("kexec_load", (246, 0, 0, None, 0)),
                   ("swapoff", (168, b"/swapfile")),
                   ("acct", (163, b"/tmp/acct")),
                   ("syslog READ_ALL", (103, 3, ctypes.create_string_buffer(4096), 4096)),
                   ("iopl", (172, 3)),
                   ("ioperm", (173, 0x60, 1, 1))]:
    r = libc.syscall(*args)
    print(name, r, errno.errorcode.get(ctypes.get_errno(), ""))
