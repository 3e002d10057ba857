# expect: errno ENOSPC
# Writes until the disk is full (--disk caps the sandbox's own storage).
import errno

written = 0
try:
    with open("/tmp/fill", "wb") as f:
        chunk = b"\0" * (1 << 20)
        while True:
            f.write(chunk)
            f.flush()
            written += len(chunk)
except OSError as e:
    print("stopped after", written >> 20, "MiB:", errno.errorcode.get(e.errno, e))
