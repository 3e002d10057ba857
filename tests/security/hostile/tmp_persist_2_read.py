# expect: contained
# The second half of tmp_persist_1_write.py: a fresh run looks for the files
# the previous run planted.
import os

for path in ["/tmp/sentry-hostile-persist", "/var/tmp/sentry-hostile-persist",
             "/dev/shm/sentry-hostile-persist", "/home/sandbox/.sentry-hostile-persist"]:
    if os.path.exists(path):
        print("ESCAPED: a file of the previous run is visible:", path)
for d in ["/tmp", "/var/tmp", "/dev/shm"]:
    try:
        print(d, os.listdir(d))
    except OSError as e:
        print(d, e)
