"""1,000 small files written and read back (bench/coverage.sh corpus).

usage: small_files.py DIR   (DIR must exist; a fresh subdirectory is made and removed)
"""
import os
import shutil
import sys
import tempfile

root = tempfile.mkdtemp(dir=sys.argv[1])
data = b"x" * 512
for i in range(1000):
    with open(os.path.join(root, f"f{i:04d}.txt"), "wb") as f:
        f.write(data)
total = 0
for i in range(1000):
    with open(os.path.join(root, f"f{i:04d}.txt"), "rb") as f:
        total += len(f.read())
shutil.rmtree(root)
assert total == 512 * 1000, total
