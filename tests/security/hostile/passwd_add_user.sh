# expect: errno EACCES
# Adds a uid-0 user to /etc/passwd and /etc/shadow, and a sudoers rule.
python3 - <<'PY'
import errno
for path, line in [("/etc/passwd", "evil:x:0:0::/root:/bin/sh\n"),
                   ("/etc/shadow", "evil::19000:0:99999:7:::\n"),
                   ("/etc/sudoers.d/evil", "evil ALL=(ALL) NOPASSWD: ALL\n")]:
    try:
        with open(path, "a") as f:
            f.write(line)
        print(path, "appended")
    except OSError as e:
        print(path, errno.errorcode.get(e.errno, e))
PY
useradd -o -u 0 evil2 2>&1 | head -2
