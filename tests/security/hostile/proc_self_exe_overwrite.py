# expect: contained
# The runc CVE-2019-5736 pattern: open the running binary (/proc/self/exe,
# the interpreter) for writing to replace it on the host. The runner checks
# the host's python3 is byte-for-byte unchanged.
import errno
import os

for path in ["/proc/self/exe", "/usr/bin/python3", os.path.realpath("/usr/bin/python3")]:
    for flags in (os.O_WRONLY, os.O_RDWR | os.O_TRUNC, os.O_WRONLY | os.O_APPEND):
        try:
            fd = os.open(path, flags)
            os.write(fd, b"#!/bin/sh\necho pwned\n")
            print(path, "WRITTEN")
            os.close(fd)
        except OSError as e:
            print(path, flags, errno.errorcode.get(e.errno, e))
