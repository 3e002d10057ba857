"""A socket echo over loopback: 500 round trips of 64 bytes on TCP 127.0.0.1."""
import socket
import threading

srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)


def serve():
    conn, _ = srv.accept()
    with conn:
        while data := conn.recv(4096):
            conn.sendall(data)


t = threading.Thread(target=serve)
t.start()
with socket.create_connection(srv.getsockname()) as c:
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    msg = b"y" * 64
    for _ in range(500):
        c.sendall(msg)
        got = b""
        while len(got) < len(msg):
            got += c.recv(4096)
t.join()
srv.close()
