# expect: contained
# Maps the host's listening services through /proc/net (tcp, tcp6, unix,
# route): the runner listens on HOST_LISTEN_PORT, which must not show.
import os

port = int(os.environ.get("HOST_LISTEN_PORT", "0"))
for name in ["tcp", "tcp6", "udp", "unix", "route", "arp", "dev", "fib_trie"]:
    path = "/proc/net/" + name
    try:
        data = open(path).read()
        print(path, data[:1000])
        if port and f":{port:04X} " in data:
            print("ESCAPED: the host's listener shows in", path)
    except OSError as e:
        print(path, e)
for path in ["/proc/self/net/tcp", "/proc/1/net/tcp"]:
    try:
        data = open(path).read()
        if port and f":{port:04X} " in data:
            print("ESCAPED: the host's listener shows in", path)
    except OSError as e:
        print(path, e)
