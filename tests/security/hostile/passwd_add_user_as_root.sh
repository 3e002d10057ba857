# expect: contained
# flags: --root
# The same as uid 0 inside: the sandbox's /etc/passwd changes, the host's
# does not (the runner compares it byte for byte).
echo 'evil:x:0:0::/root:/bin/sh' >> /etc/passwd && echo "appended in the sandbox"
grep evil /etc/passwd
mkdir -p /etc/sudoers.d && echo 'evil ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/sentry-hostile
