# expect: contained
# Fileless execution: copy a binary into a memfd and execute it through
# /proc/self/fd (or fexecve): whatever runs must still be in the sandbox.
import errno
import os

fd = os.memfd_create("payload", 0)
with open("/usr/bin/id", "rb") as f:
    os.write(fd, f.read())
pid = os.fork()
if pid == 0:
    try:
        os.execve(f"/proc/self/fd/{fd}", ["payload"], {})
    except OSError as e:
        print("exec memfd", errno.errorcode.get(e.errno, e), flush=True)
        os._exit(1)
print("status", os.waitpid(pid, 0)[1])
