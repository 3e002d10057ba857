# expect: contained
# LD_PRELOAD tricks: a global /etc/ld.so.preload, a library named by a host
# path outside the sandbox, and a preload that would run in the sentry.
echo /tmp/evil.so > /etc/ld.so.preload; echo "ld.so.preload: $?"
LD_PRELOAD=/work/main/build/libevil.so /bin/true; echo "host path preload: $?"
LD_PRELOAD=/proc/1/root/lib/x86_64-linux-gnu/libc.so.6 /bin/true; echo "proc root preload: $?"
printf 'int x;' > /tmp/evil.c
if command -v gcc >/dev/null; then
  gcc -shared -fPIC -o /tmp/evil.so /tmp/evil.c 2>&1 | head -2
  LD_PRELOAD=/tmp/evil.so /bin/true; echo "own preload (harmless inside): $?"
fi
