# expect: contained
# Binds privileged ports (22, 80, 443) and a high one, to impersonate a host
# service. They may bind (the sandbox has its own emulated loopback, uid 1000
# gets no EACCES there) but must never be a host listener; a connection to
# the host's loopback listener from the same run must still be refused.
import errno
import socket

for port in [22, 80, 443, 40999]:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        s.listen()
        print(port, "bound")
    except OSError as e:
        print(port, errno.errorcode.get(e.errno, e))

import os
port = int(os.environ.get("HOST_LISTEN_PORT", "0"))
if port:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        print("connected to", port, "(the sandbox's own listener?)")
    except OSError as e:
        print("host port", port, errno.errorcode.get(e.errno, e))
