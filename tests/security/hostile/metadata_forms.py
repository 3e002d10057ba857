# expect: errno ENETUNREACH
# flags: --allow-net example.com:443
# The cloud metadata service in every spelling, with an allowlist in force:
# dotted, decimal, hex, octal, short forms, IPv4-mapped IPv6 and NAT64.
import errno
import socket

for host in ["169.254.169.254", "2852039166", "0xA9FEA9FE", "0251.0376.0251.0376",
             "169.254.43518", "::ffff:169.254.169.254", "::ffff:a9fe:a9fe",
             "64:ff9b::a9fe:a9fe", "fd00:ec2::254"]:
    try:
        s = socket.create_connection((host, 80), timeout=3)
        s.sendall(b"GET /latest/meta-data/iam/security-credentials/ HTTP/1.0\r\n\r\n")
        print("ESCAPED: reached the metadata service as", host, s.recv(200))
    except OSError as e:
        print(host, errno.errorcode.get(e.errno, e))
