# expect: contained
# flags: --root
# Deletes the system's programs as uid 0 inside: it works, in the sandbox's
# own upper layer only; the host's /usr/bin is untouched.
rm -rf /usr/bin/env /usr/bin/python3* /etc/passwd /lib/x86_64-linux-gnu/libc.so.6
ls /usr/bin/env /etc/passwd 2>&1
echo "deleted in the sandbox"
