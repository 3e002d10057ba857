# One run of the isolation test: says what it sees of earlier runs, then
# leaves traces of its own for later runs to look for. Run N prints CLEAN
# when it saw nothing.
import builtins, os, socket, subprocess, sys

seen = []
for d in ("/tmp", "/var/tmp", "/dev/shm", "/home/sandbox"):
    for name in os.listdir(d):
        if name.startswith("iso-"):
            seen.append(f"file {d}/{name}")
for k in os.environ:
    if k.startswith("ISO_"):
        seen.append(f"env {k}")
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if b"iso-sleeper" in cmd:
            seen.append(f"process {pid}")
for addr in ("\0iso-abstract", "/tmp/iso.sock"):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(addr)
        seen.append(f"unix socket {addr!r}")
    except OSError:
        pass
    s.close()
s = socket.socket()
try:
    s.connect(("127.0.0.1", 45678))
    seen.append("tcp listener 127.0.0.1:45678")
except OSError:
    pass
s.close()
if hasattr(builtins, "iso_marker") or "iso_module" in sys.modules:
    seen.append("python global")

run = sys.argv[1] if len(sys.argv) > 1 else "x"
for d in ("/tmp", "/var/tmp", "/dev/shm", "/home/sandbox"):
    open(f"{d}/iso-{run}", "w").write(run)
os.environ["ISO_RUN"] = run
builtins.iso_marker = run
sys.modules["iso_module"] = sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", "iso-sleeper"],
                 start_new_session=True, env=dict(os.environ))
abstract = socket.socket(socket.AF_UNIX)
abstract.bind("\0iso-abstract")
abstract.listen()
named = socket.socket(socket.AF_UNIX)
named.bind("/tmp/iso.sock")
named.listen()
tcp = socket.socket()
tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind(("127.0.0.1", 45678))
tcp.listen()
print("SEEN: " + "; ".join(seen) if seen else "CLEAN")
