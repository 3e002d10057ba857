# expect: errno ECONNREFUSED
# A reverse shell to the host's loopback (the runner listens there on
# HOST_LISTEN_PORT: nothing may arrive) and to its usual addresses.
import errno
import os
import socket

port = int(os.environ.get("HOST_LISTEN_PORT", "4444"))
for host in ["127.0.0.1", "localhost", "::1", "10.0.2.2", "172.17.0.1", "192.168.1.1"]:
    try:
        s = socket.create_connection((host, port), timeout=3)
        s.sendall(b"REVERSE-SHELL-HELLO\n")
        print(host, "CONNECTED")
        s.close()
    except OSError as e:
        print(host, errno.errorcode.get(e.errno, e))
