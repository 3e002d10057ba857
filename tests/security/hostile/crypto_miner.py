# expect: timeout
# Crypto-mining style: hashing on every CPU with threads and processes.
import hashlib
import multiprocessing
import os
import threading


def mine(seed):
    nonce = 0
    while True:
        hashlib.sha256(b"%d:%d" % (seed, nonce)).digest()
        nonce += 1


for i in range(4):
    threading.Thread(target=mine, args=(i,), daemon=True).start()
procs = [multiprocessing.Process(target=mine, args=(100 + i,)) for i in range(os.cpu_count() or 2)]
for p in procs:
    p.start()
mine(999)
