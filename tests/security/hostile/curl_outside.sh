# expect: contained
# curl and wget to outside addresses (by IP and by name): must fail at once,
# not hang until the timeout.
curl -sS -m 20 http://93.184.215.14/ -o /dev/null; echo "curl ip: $?"
curl -sS -m 20 https://example.com/ -o /dev/null; echo "curl name: $?"
curl -sS -m 20 http://169.254.169.254/latest/meta-data/ ; echo "curl metadata: $?"
