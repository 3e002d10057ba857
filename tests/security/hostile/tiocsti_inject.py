# expect: contained
# TIOCSTI: pushes a command into the controlling terminal's input queue, to
# be run by the shell that started the sandbox.
import errno
import fcntl
import termios

for fd in (0, 1, 2):
    try:
        for ch in "echo PWNED-BY-TIOCSTI\n":
            fcntl.ioctl(fd, termios.TIOCSTI, ch.encode())
        print("fd", fd, "TIOCSTI ok")
    except OSError as e:
        print("fd", fd, errno.errorcode.get(e.errno, e))
for path in ["/dev/tty", "/dev/pts/0", "/dev/ptmx"]:
    try:
        open(path, "rb")
        print(path, "OPENED")
    except OSError as e:
        print(path, errno.errorcode.get(e.errno, e))
