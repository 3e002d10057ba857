# expect: errno EPERM
# Makes a setuid shell: chmod +s on system binaries, and on a copy in /tmp
# (which may work but must give no privilege: no_new_privs, no host root).
import errno
import os
import shutil
import subprocess

for path in ["/bin/sh", "/usr/bin/python3", "/usr/bin/env"]:
    try:
        os.chmod(path, 0o4755)
        print("chmod +s", path, "ok")
    except OSError as e:
        print("chmod +s", path, errno.errorcode.get(e.errno, e))
try:
    os.chown("/usr/bin/env", 1000, 1000)
except OSError as e:
    print("chown /usr/bin/env", errno.errorcode.get(e.errno, e))
shutil.copy("/usr/bin/id", "/tmp/id")
os.chmod("/tmp/id", 0o6755)
print(subprocess.run(["/tmp/id"], capture_output=True, text=True).stdout)
try:
    os.chown("/tmp/id", 0, 0)
    print("chown /tmp/id root ok")
except OSError as e:
    print("chown /tmp/id", errno.errorcode.get(e.errno, e))
