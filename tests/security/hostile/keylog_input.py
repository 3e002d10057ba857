# expect: errno ENOENT
# Keylogging: the input devices, the console and the terminals.
import errno
import glob
import os

for path in ["/dev/input/event0", "/dev/input/mice", "/dev/tty0", "/dev/console", "/dev/tty1",
             "/dev/vcs", "/dev/uinput", "/dev/hidraw0"] + glob.glob("/dev/input/*"):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        print(path, "OPENED")
        os.close(fd)
    except OSError as e:
        print(path, errno.errorcode.get(e.errno, e))
