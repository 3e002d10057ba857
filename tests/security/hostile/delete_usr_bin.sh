# expect: errno EACCES
# Deletes the system's programs (as uid 1000).
rm -rf /usr/bin/* /bin/* /etc/passwd 2>&1 | head -3
python3 -c '
import errno, os
try:
    os.unlink("/usr/bin/env")
except OSError as e:
    print("unlink /usr/bin/env", errno.errorcode[e.errno])
'
