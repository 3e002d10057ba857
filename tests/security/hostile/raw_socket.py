# expect: errno EPERM
# Raw and packet sockets, to sniff or forge traffic.
import errno
import socket

for name, args in [("raw icmp", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
                   ("raw tcp", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)),
                   ("raw6", (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)),
                   ("packet", (socket.AF_PACKET, socket.SOCK_RAW, 0x0300)),
                   ("netlink sock_diag", (socket.AF_NETLINK, socket.SOCK_RAW, 4)),
                   ("netlink audit", (socket.AF_NETLINK, socket.SOCK_RAW, 9)),
                   ("ping dgram", (socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP))]:
    try:
        s = socket.socket(*args)
        print(name, "OPENED")
        s.close()
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e))
