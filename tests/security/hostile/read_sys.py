# expect: errno ENOENT
# Reads /sys: host network interfaces, DMI serials, the cgroup tree, kernel
# tunables, and the cgroup v1 release_agent (the CVE-2022-0492 escape).
import errno
import os

for path in ["/sys/class/net", "/sys/class/dmi/id/product_uuid", "/sys/firmware/acpi",
             "/sys/kernel/debug", "/sys/fs/cgroup", "/sys/fs/cgroup/memory/release_agent",
             "/sys/kernel/security", "/sys/block"]:
    try:
        if os.path.isdir(path):
            print(path, os.listdir(path)[:20])
        else:
            print(path, open(path).read()[:200])
    except OSError as e:
        print(path, errno.errorcode.get(e.errno, e))
try:
    with open("/sys/fs/cgroup/memory/release_agent", "w") as f:
        f.write("/tmp/evil.sh")
    print("ESCAPED: wrote release_agent")
except OSError as e:
    print("release_agent write", errno.errorcode.get(e.errno, e))
