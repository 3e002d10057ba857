# expect: contained
# Leaves files for the next user of the machine: /tmp, /var/tmp, /dev/shm,
# the home directory. tmp_persist_2_read.py runs next and must not see them
# (nor may the host's /tmp hold them afterwards).
import errno

for path in ["/tmp/sentry-hostile-persist", "/var/tmp/sentry-hostile-persist",
             "/dev/shm/sentry-hostile-persist", "/home/sandbox/.sentry-hostile-persist"]:
    try:
        with open(path, "w") as f:
            f.write("planted by the previous run\n")
        print(path, "written")
    except OSError as e:
        print(path, errno.errorcode.get(e.errno, e))
