# expect: contained
# Looks for application secrets: /app/.env, .env files anywhere it can reach,
# the usual credential files of cloud tools.
import errno
import os

for path in ["/app/.env", "/app/config.json", "/.env", "/srv/.env", "/opt/app/.env",
             os.path.expanduser("~/.aws/credentials"), "/root/.aws/credentials",
             os.path.expanduser("~/.config/gcloud/credentials.db"), "/run/secrets/token",
             "/var/run/secrets/kubernetes.io/serviceaccount/token"]:
    try:
        print(path, "READ", open(path).read()[:300])
    except OSError as e:
        print(path, errno.errorcode[e.errno])
for top in ["/", "/home", "/tmp", "/var", "/run"]:
    for dirpath, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in ("proc", "usr", "lib", "lib32", "lib64", "sys")]
        for f in files:
            if f.endswith(".env") or f == ".env":
                p = os.path.join(dirpath, f)
                try:
                    print(p, open(p).read()[:300])
                except OSError as e:
                    print(p, errno.errorcode[e.errno])
