# expect: errno EACCES
# Looks for SSH keys and root's files: ~/.ssh, /root/.ssh, /root, /home/*.
import errno
import glob
import os

for path in ["/root/.ssh/id_rsa", "/root/.ssh/id_ed25519", "/root/.ssh/authorized_keys",
             "/root/.bashrc", "/root/.npmrc", os.path.expanduser("~/.ssh/id_rsa")]:
    try:
        print(path, open(path).read())
    except OSError as e:
        print(path, errno.errorcode[e.errno])
for d in ["/root", "/root/.ssh", "/home"]:
    try:
        print(d, os.listdir(d))
    except OSError as e:
        print(d, errno.errorcode[e.errno])
for path in glob.glob("/home/*/.ssh/*") + glob.glob("/root/**", recursive=True):
    try:
        print(path, open(path).read()[:200])
    except OSError as e:
        print(path, errno.errorcode[e.errno])
