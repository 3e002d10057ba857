# expect: errno ENOSPC
# flags: --disk 32m
# A zip bomb: 256 MiB of zeros compressed into a small archive, extracted to
# /tmp against a 32 MiB disk.
import errno
import zipfile

with zipfile.ZipFile("/tmp/bomb.zip", "w", zipfile.ZIP_DEFLATED) as z:
    with z.open("zeros.bin", "w", force_zip64=True) as f:
        block = b"\0" * (1 << 20)
        for _ in range(256):
            f.write(block)
import os
print("archive bytes:", os.path.getsize("/tmp/bomb.zip"))
try:
    with zipfile.ZipFile("/tmp/bomb.zip") as z:
        z.extractall("/tmp/out")
    print("extracted", os.path.getsize("/tmp/out/zeros.bin"))
except OSError as e:
    print("extract", errno.errorcode.get(e.errno, e))
