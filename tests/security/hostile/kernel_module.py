# expect: contained
# Loads a kernel module: init_module/finit_module through ctypes, insmod,
# modprobe; delete_module of a loaded one.
import ctypes
import errno
import subprocess

libc = ctypes.CDLL(None, use_errno=True)
SYS_init_module, SYS_delete_module, SYS_finit_module = 175, 176, 313
buf = ctypes.create_string_buffer(b"\x7fELF" + b"\0" * 60)
for name, args in [("init_module", (SYS_init_module, buf, 64, b"")),
                   ("finit_module", (SYS_finit_module, 0, b"", 0)),
                   ("delete_module", (SYS_delete_module, b"ext4", 0))]:
    r = libc.syscall(*args)
    print(name, r, errno.errorcode.get(ctypes.get_errno(), ""))
for cmd in (["insmod", "/tmp/evil.ko"], ["modprobe", "dummy"], ["rmmod", "ext4"]):
    try:
        print(cmd, subprocess.run(cmd, capture_output=True, text=True))
    except OSError as e:
        print(cmd, errno.errorcode.get(e.errno, e))
