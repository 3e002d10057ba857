# expect: contained
# Scans the host's loopback for services (the runner listens on
# HOST_LISTEN_PORT): 127.0.0.1 and ::1 are the sandbox's own.
import os
import socket

port = int(os.environ.get("HOST_LISTEN_PORT", "0"))
open_ports = []
for p in list(range(1, 1025)) + [port, 3306, 5432, 6379, 8080, 9200, 11211, 27017]:
    for host in ["127.0.0.1", "::1"]:
        try:
            socket.create_connection((host, p), timeout=0.5).close()
            open_ports.append((host, p))
        except OSError:
            pass
print("open:", open_ports)
if any(p == port for _, p in open_ports):
    print("ESCAPED: reached the host's listener")
