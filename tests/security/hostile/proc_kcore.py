# expect: contained
# Host kernel memory and kernel addresses: /proc/kcore, /proc/kallsyms,
# /proc/self/pagemap, /proc/sched_debug, /proc/keys, /proc/modules.
import errno

for path in ["/proc/kcore", "/proc/kallsyms", "/proc/self/pagemap", "/proc/sched_debug",
             "/proc/keys", "/proc/modules", "/proc/self/mountinfo", "/proc/mounts",
             "/proc/self/cgroup", "/proc/cmdline"]:
    try:
        with open(path, "rb") as f:
            print(path, f.read(300))
    except OSError as e:
        print(path, errno.errorcode.get(e.errno, e))
