# expect: errno ENOENT
# Writes to raw disks and to physical memory.
import errno
import os

for path in ["/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/xvda", "/dev/mem", "/dev/kmem",
             "/dev/port", "/dev/loop0", "/dev/dm-0"]:
    try:
        fd = os.open(path, os.O_WRONLY)
        print(path, "OPENED for write")
        os.close(fd)
    except OSError as e:
        print(path, errno.errorcode.get(e.errno, e))
try:
    os.mknod("/tmp/sda", 0o600 | 0o060000, os.makedev(8, 0))
    print("mknod ok")
    os.open("/tmp/sda", os.O_RDWR)
    print("ESCAPED: opened a block device made with mknod")
except OSError as e:
    print("mknod/open", errno.errorcode.get(e.errno, e))
