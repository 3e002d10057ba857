# expect: contained
# Reads the environment of every process it can name in /proc: pid 1, the
# parent, itself, and each numeric entry (the host's processes, if visible).
import os

paths = ["/proc/1/environ", "/proc/self/environ", f"/proc/{os.getppid()}/environ"]
paths += [f"/proc/{p}/environ" for p in os.listdir("/proc") if p.isdigit()]
paths += [f"/proc/{p}/environ" for p in range(1, 400)]
for path in dict.fromkeys(paths):
    try:
        with open(path, "rb") as f:
            data = f.read()
        print(path, data.replace(b"\0", b" ").decode(errors="replace"))
        if b"AWS_SECRET" in data:
            print("ESCAPED: secret in", path)
    except OSError as e:
        pass
print("processes visible:", sorted(p for p in os.listdir("/proc") if p.isdigit()))
