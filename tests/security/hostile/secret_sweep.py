# expect: contained
# Walks every directory it can reach and prints any small file that looks
# like a secret (the host's canaries hold one; none must be reachable).
import os
import stat

seen = 0
for dirpath, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(dirpath, d) not in ("/proc", "/usr", "/sys", "/lib")]
    for f in files:
        p = os.path.join(dirpath, f)
        if p == os.path.abspath(__file__):
            continue
        try:
            st = os.lstat(p)
            if not stat.S_ISREG(st.st_mode) or st.st_size > 65536:
                continue
            data = open(p, "rb").read()
        except OSError:
            continue
        seen += 1
        for needle in (b"SENTRY_CANARY", b"AKIA", b"BEGIN OPENSSH PRIVATE KEY", b"_authToken"):
            if needle in data:
                print("found", needle, "in", p, data[:200])
print("files read:", seen)
