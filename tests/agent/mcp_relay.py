#!/usr/bin/python3
"""Keeps one stdio MCP server alive across clients that each start their own.

The MCP Inspector's CLI makes one call per run and starts its server (a
stdio command) each time; a session's state lives in one `sentry mcp`. So:

  mcp_relay.py hub SOCKET -- sentry mcp   runs the server for its own life
                                          and serves one client at a time
                                          on the unix socket SOCKET
  mcp_relay.py connect SOCKET             the command the Inspector starts:
                                          its stdin and stdout are relayed
                                          to the hub's server, line by line

Every line passes unchanged (each client sends initialize again, which the
server answers as often as asked). Test scaffolding, not part of sentry.
"""
import os
import select
import signal
import socket
import subprocess
import sys


def hub(path, argv):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the server's stdin closes: it ends
    server = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)
    client = None
    out = server.stdout.fileno()
    try:
        while server.poll() is None:
            fds = [listener, out] + ([client] if client else [])
            for r in select.select(fds, [], [])[0]:
                if r is listener:
                    conn, _ = listener.accept()
                    if client:
                        conn.close()  # one client at a time
                    else:
                        client = conn
                elif r is out:
                    data = os.read(out, 1 << 16)
                    if not data:
                        return
                    if client:
                        client.sendall(data)
                else:
                    data = client.recv(1 << 16)
                    if data:
                        server.stdin.write(data)
                        server.stdin.flush()
                    else:
                        client.close()
                        client = None
    finally:
        server.stdin.close()
        server.wait()
        os.unlink(path)


def connect(path):
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    stdin_open = True
    while True:
        fds = [sock] + ([0] if stdin_open else [])
        for r in select.select(fds, [], [])[0]:
            if r == 0:
                data = os.read(0, 1 << 16)
                if data:
                    sock.sendall(data)
                else:
                    stdin_open = False
                    sock.shutdown(socket.SHUT_WR)
            else:
                data = sock.recv(1 << 16)
                if not data:
                    return
                os.write(1, data)


if __name__ == "__main__":
    if sys.argv[1:2] == ["hub"] and sys.argv[3:4] == ["--"]:
        hub(sys.argv[2], sys.argv[4:])
    elif sys.argv[1:2] == ["connect"]:
        connect(sys.argv[2])
    else:
        sys.exit(__doc__)
