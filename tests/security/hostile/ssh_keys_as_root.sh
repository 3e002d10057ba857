# expect: contained
# flags: --root
# The same hunt for keys, as uid 0 inside the sandbox: /root exists but is
# the sandbox's own, empty.
ls -laR /root 2>&1 | head -50
cat /root/.ssh/* /root/.bashrc /root/.npmrc /root/.gitconfig 2>&1
find /root /home /tmp /etc /run /var -name 'id_*' -o -name '*.pem' -path '*ssh*' 2>/dev/null | head
