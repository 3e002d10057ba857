"""A subprocess fan-out: 20 children (/bin/true, /bin/echo via sh), 4 at a time."""
import subprocess
from concurrent.futures import ThreadPoolExecutor


def child(i):
    cmd = ["/bin/true"] if i % 2 else ["/bin/sh", "-c", f"echo {i} >/dev/null"]
    return subprocess.run(cmd, check=True).returncode


with ThreadPoolExecutor(4) as pool:
    assert sum(pool.map(child, range(20))) == 0
