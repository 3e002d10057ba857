# expect: contained
# Symlinks to / and .. chains, /proc/self/root, /proc/*/cwd, to climb out to
# the host's file system (canaries live in the host's /root and /tmp).
import errno
import os

os.symlink("/", "/tmp/rootlink")
os.symlink("../../../../../../../../", "/tmp/uplink")
for path in ["/tmp/rootlink/root", "/tmp/uplink/root", "/tmp/rootlink/tmp", "/tmp/uplink/work",
             "/proc/self/root/root", "/proc/self/root/../../..", "/proc/1/root", "/proc/1/cwd",
             "/proc/self/cwd/../../../../root", "/tmp/../../../../root/.ssh", "/work", "/app"]:
    try:
        print(path, os.listdir(path))
    except OSError as e:
        print(path, errno.errorcode.get(e.errno, e))
for path in ["/tmp/rootlink/etc/shadow", "/tmp/uplink/etc/shadow",
             "/proc/self/root/etc/shadow", "/tmp/rootlink/proc/1/environ"]:
    try:
        print(path, open(path).read()[:200])
    except OSError as e:
        print(path, errno.errorcode.get(e.errno, e))
