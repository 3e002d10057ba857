// Processes, threads and signals through the real binary: each program runs
// natively and under sentry, and both must print the same.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

// Runs a Python script both ways; the outputs must be equal and non-empty.
void ExpectSameAsNative(const std::string& script) {
  ProcessResult native = NativeScript(script);
  ASSERT_EQ(native.exit_code, 0) << "natively: " << Describe(native);
  ASSERT_FALSE(native.out.empty());
  ProcessResult r = SandboxScript(script, {"--timeout", "60", "--pids-limit", "256"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, native.out) << r.err;
}

// The same for a bash script, run from a fresh directory with a clean
// environment.
void ExpectSameAsNativeBash(const std::string& script) {
  TempDir dir;
  ProcessResult native =
      RunIn(dir.path(), {"PATH=/usr/bin:/bin", "HOME=" + dir.path(), "LC_ALL=C.UTF-8"},
            {"/bin/bash", "-c", script}, /*clean_env=*/true);
  ASSERT_EQ(native.exit_code, 0) << "natively: " << Describe(native);
  ProcessResult r = SentryIn(dir.path(), {"--timeout", "30"}, {"/bin/bash", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, native.out) << r.err;
}

TEST(ProcessTest, GroupStopAndContinueOfAChild) {
  // The sentry traces every guest task (PTRACE_SEIZE); a group-stop must still
  // reach the real parent's waitpid, and SIGCONT must end it (PTRACE_LISTEN).
  ExpectSameAsNative(R"py(import os, signal, time
pid = os.fork()
if pid == 0:
    while True:
        time.sleep(0.01)
for _ in range(3):
    os.kill(pid, signal.SIGSTOP)
    p, st = os.waitpid(pid, os.WUNTRACED)
    print("stopped", p == pid, os.WIFSTOPPED(st), os.WSTOPSIG(st) == signal.SIGSTOP)
    os.kill(pid, signal.SIGCONT)
    p, st = os.waitpid(pid, os.WCONTINUED)
    print("continued", p == pid, os.WIFCONTINUED(st))
os.kill(pid, signal.SIGTSTP)
p, st = os.waitpid(pid, os.WUNTRACED)
print("tstp", os.WIFSTOPPED(st), os.WSTOPSIG(st) == signal.SIGTSTP)
os.kill(pid, signal.SIGKILL)
p, st = os.waitpid(pid, 0)
print("killed", os.WIFSIGNALED(st), os.WTERMSIG(st) == signal.SIGKILL)
)py");
}

TEST(ProcessTest, StoppedChildCanBeKilledWithoutContinuing) {
  ExpectSameAsNative(R"py(import os, signal, time
pid = os.fork()
if pid == 0:
    os.kill(os.getpid(), signal.SIGSTOP)
    os._exit(3)
p, st = os.waitpid(pid, os.WUNTRACED)
print("self-stopped", os.WIFSTOPPED(st))
os.kill(pid, signal.SIGTERM)
os.kill(pid, signal.SIGCONT)
p, st = os.waitpid(pid, 0)
print("terminated", os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGTERM)
)py");
}

TEST(ProcessTest, BashProcessSubstitutionAndDevFd) {
  ExpectSameAsNativeBash(R"sh(
diff <(echo a; echo b) <(echo a; echo b) && echo same
diff <(echo a) <(echo b) >/dev/null; echo differ $?
cat <(echo procsub)
echo piped | cat /dev/fd/0
echo stdin | cat /dev/stdin
while read -r l; do echo "read $l"; done < <(printf '1\n2\n')
exec 5< <(echo fd5); cat /dev/fd/5; exec 5<&-
echo tee > >(cat > out.txt); wait $!; cat out.txt
paste <(seq 3) <(seq 4 6)
)sh");
}

TEST(ProcessTest, BashHeredocsSubstitutionsJobsTraps) {
  ExpectSameAsNativeBash(R"sh(
cat <<EOF
heredoc $((6 * 7)) $(echo nested $(echo deeper))
EOF
cat <<'EOF'
literal $HOME
EOF
x=$(printf 'a\nb\n' | wc -l); echo "lines $x"
(sleep 0.2; exit 3) & a=$!
(sleep 0.1; exit 4) & b=$!
wait $a; echo "job a $?"
wait $b; echo "job b $?"
for i in 1 2 3; do (exit $i) & done; wait; echo "all waited $?"
trap 'echo got USR1' USR1
kill -USR1 $$
trap 'echo child exited' CHLD
sleep 0.05 & wait
trap - CHLD
trap 'echo on exit' EXIT
false | true; echo "no pipefail $?"
set -o pipefail
false | true; echo "pipefail $?"
(exit 7) | (exit 0) | cat; echo "pipefail last $?"
true | (exit 5) | true; echo "statuses ${PIPESTATUS[*]}"
( trap 'echo term caught; exit 9' TERM; kill -TERM $BASHPID; sleep 5 ); echo "subshell $?"
)sh");
}

TEST(ProcessTest, EnvShebangScriptInTmpByPathAndByPATH) {
  ExpectSameAsNative(R"py(import os, subprocess, sys
base = sys.argv[1]
os.chdir(base)
with open("x", "w") as f:
    f.write("#!/usr/bin/env python3\nimport os, sys\nprint('ran', os.path.basename(sys.argv[0]), sys.argv[1:])\n")
os.chmod("x", 0o755)
print(subprocess.run(["./x", "a"], capture_output=True, text=True).stdout.strip())
env = dict(os.environ, PATH=base + ":/usr/bin:/bin")
print(subprocess.run(["x", "b"], capture_output=True, text=True, env=env).stdout.strip())
print(subprocess.run("x c | tr a-z A-Z", shell=True, capture_output=True, text=True, env=env).stdout.strip())
os.chmod("x", 0o644)
try:
    subprocess.run(["./x"])
except PermissionError as e:
    print("not executable", e.errno)
import shutil
shutil.copy("/bin/echo", "myecho")
print(subprocess.run(["./myecho", "elf", "ran"], capture_output=True, text=True).stdout.strip())
print(subprocess.run(["myecho", "via", "PATH"], capture_output=True, text=True, env=env).stdout.strip())
)py");
}

// A root guest reads its own /proc/PID/fd (host mode 0500, its owner's) and
// reopens its pipes and ptys, as uid 1000 does.
TEST(ProcessTest, RootGuestSeesItsOwnFdsAndReopensPipes) {
  constexpr const char* kScript = R"py(import os, sys
r, w = os.pipe()
print("listed", str(w) in os.listdir("/proc/self/fd"))
os.write(os.open(f"/dev/fd/{w}", os.O_WRONLY), b"via /dev/fd")
print(os.read(r, 64).decode())
m, s = os.openpty()
print("tty", os.ttyname(s).startswith("/dev/pts/"))
print("stdin", sys.stdin.read().strip())
)py";
  for (const char* user : {"--root", "--no-copy-script"}) {
    SCOPED_TRACE(user);
    ProcessResult r =
        RunSentry({user, "--timeout", "20"}, {"/usr/bin/python3", "-c", kScript}, "piped in\n");
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(r.out, "listed True\nvia /dev/fd\ntty True\nstdin piped in\n");
  }
}

struct PyCase {
  const char* name;
  const char* script;
};

const PyCase kPythonCases[] = {
    {"SubprocessStartNewSession", R"py(import os, subprocess, sys
p = subprocess.run([sys.executable, "-c",
    "import os; print(os.getsid(0) == os.getpid(), os.getpgid(0) == os.getpid())"],
    start_new_session=True, capture_output=True, text=True)
print("new session", p.stdout.strip())
p = subprocess.run([sys.executable, "-c", "import os; print(os.getpgid(0) == os.getpid())"],
    process_group=0, capture_output=True, text=True)
print("new group", p.stdout.strip())
p = subprocess.run([sys.executable, "-c", "import os; print(os.getsid(0) == os.getpid())"],
    capture_output=True, text=True)
print("same session", p.stdout.strip())
)py"},
    {"SubprocessPassFdsAndCloseFds", R"py(import os, subprocess, sys
fds = []
for _ in range(4):
    r, w = os.pipe()
    os.set_inheritable(r, True)
    os.set_inheritable(w, True)
    fds += [r, w]
probe = "import os, sys; print(sorted(f for f in map(int, sys.argv[1:]) if os.path.exists(f'/proc/self/fd/{f}')))"
args = [sys.executable, "-c", probe] + [str(f) for f in fds]
for keep in fds[:3]:
    out = subprocess.run(args, pass_fds=[keep], capture_output=True, text=True).stdout.strip()
    print("pass_fds", out == str([keep]))
print("close_fds=False", subprocess.run(args, close_fds=False, capture_output=True, text=True).stdout.strip() == str(sorted(fds)))
r, w = fds[0], fds[1]
subprocess.run([sys.executable, "-c", f"import os; os.write({w}, b'through the pipe')"], pass_fds=[w])
print(os.read(r, 100).decode())
)py"},
    {"SubprocessTimeoutKillsTheChild", R"py(import os, subprocess, sys, time
t = time.monotonic()
try:
    subprocess.run([sys.executable, "-c", "import time; time.sleep(20)"], timeout=0.5)
except subprocess.TimeoutExpired:
    print("timed out", time.monotonic() - t < 10)
p = subprocess.Popen(["sleep", "20"])
try:
    p.wait(timeout=0.2)
except subprocess.TimeoutExpired:
    p.kill()
print("killed", p.wait())
try:
    # exec: killing a shell that forked would leave sleep holding our stderr.
    subprocess.check_output("exec sleep 20", shell=True, timeout=0.3)
except subprocess.TimeoutExpired as e:
    print("shell timed out", e.cmd)
)py"},
    {"AlarmAndItimerHandlers", R"py(import signal, time
got = []
signal.signal(signal.SIGALRM, lambda s, f: got.append("alarm"))
signal.alarm(1)
time.sleep(1.5)
print("alarm", got)
got.clear()
signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
deadline = time.monotonic() + 10
while len(got) < 5 and time.monotonic() < deadline:
    time.sleep(0.01)
signal.setitimer(signal.ITIMER_REAL, 0)
print("itimer real", len(got) >= 5)
ticks = []
signal.signal(signal.SIGVTALRM, lambda s, f: ticks.append(1))
signal.setitimer(signal.ITIMER_VIRTUAL, 0.01, 0.01)
while len(ticks) < 3 and time.monotonic() < deadline:
    sum(range(10000))
signal.setitimer(signal.ITIMER_VIRTUAL, 0)
print("itimer virtual", len(ticks) >= 3)
signal.signal(signal.SIGALRM, signal.SIG_DFL)
print("remaining", signal.alarm(0))
)py"},
    {"FiftyThreadsWithLocksAndConditions", R"py(import threading
lock = threading.Lock()
cond = threading.Condition()
count = [0]
ready = [0]
go = [False]
def work():
    with cond:
        ready[0] += 1
        cond.notify_all()
        cond.wait_for(lambda: go[0])
    for _ in range(2000):
        with lock:
            count[0] += 1
threads = [threading.Thread(target=work) for _ in range(50)]
for t in threads:
    t.start()
with cond:
    cond.wait_for(lambda: ready[0] == 50)
    go[0] = True
    cond.notify_all()
for t in threads:
    t.join()
print("count", count[0])
sem = threading.BoundedSemaphore(5)
inside = [0]
peak = [0]
def bounded():
    with sem:
        with lock:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
        threading.Event().wait(0.01)
        with lock:
            inside[0] -= 1
ts = [threading.Thread(target=bounded) for _ in range(50)]
[t.start() for t in ts]
[t.join() for t in ts]
print("peak within bound", peak[0] <= 5)
b = threading.Barrier(50)
ids = []
def at_barrier():
    ids.append(b.wait())
ts = [threading.Thread(target=at_barrier) for _ in range(50)]
[t.start() for t in ts]
[t.join() for t in ts]
print("barrier", sorted(ids) == list(range(50)))
)py"},
    {"ThreadAndProcessPoolExecutors", R"py(import concurrent.futures as cf, os
def square(x):
    return x * x
def pid(_):
    return os.getpid()
if __name__ == "__main__":
    with cf.ThreadPoolExecutor(8) as ex:
        print("threads", sum(ex.map(square, range(1000))))
    with cf.ProcessPoolExecutor(4) as ex:
        print("processes", sum(ex.map(square, range(1000))))
        print("ran elsewhere", os.getpid() not in set(ex.map(pid, range(20))))
)py"},
    {"MultiprocessingSpawn", R"py(import multiprocessing as mp, os
def square(x):
    return x * x
def report(q):
    q.put((os.getppid(), __name__))
if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        print("pool", sum(pool.map(square, range(100))))
    q = ctx.Queue()
    p = ctx.Process(target=report, args=(q,))
    p.start()
    ppid, name = q.get(timeout=30)
    p.join()
    print("child", ppid == os.getpid(), name, p.exitcode)
)py"},
    {"MultiprocessingSharedMemory", R"py(import multiprocessing as mp, os
from multiprocessing import shared_memory
def fill(name):
    shm = shared_memory.SharedMemory(name)
    shm.buf[:5] = b"hello"
    shm.close()
if __name__ == "__main__":
    shm = shared_memory.SharedMemory(create=True, size=4096)
    print("in /dev/shm", os.path.exists("/dev/shm/" + shm.name))
    p = mp.get_context("fork").Process(target=fill, args=(shm.name,))
    p.start()
    p.join()
    print("written by child", bytes(shm.buf[:5]))
    sl = shared_memory.ShareableList([1, 2.5, "three"])
    print("list", list(shared_memory.ShareableList(name=sl.shm.name)))
    sl.shm.close()
    sl.shm.unlink()
    shm.close()
    shm.unlink()
    print("unlinked", not os.path.exists("/dev/shm/" + shm.name))
)py"},
    {"GetppidIsConsistent", R"py(import os, subprocess, sys
me = os.getpid()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    os.write(w, str(os.getppid()).encode())
    os._exit(0)
os.close(w)
print("fork", os.read(r, 32).decode() == str(me))
os.waitpid(pid, 0)
out = subprocess.run([sys.executable, "-c", "import os; print(os.getppid())"],
                     capture_output=True, text=True).stdout.strip()
print("subprocess", out == str(me))
out = subprocess.run(["/bin/sh", "-c", "echo $PPID"], capture_output=True, text=True).stdout.strip()
print("shell", out == str(me))
with open(f"/proc/{me}/status") as f:
    ppid = [l.split()[1] for l in f if l.startswith("PPid:")][0]
print("proc status", ppid == str(os.getppid()))
# An orphan is re-parented (to the sandbox's pid 1 or a subreaper natively).
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    if os.fork() == 0:
        import time
        time.sleep(0.3)
        os.write(w, str(os.getppid() != me and os.getppid() != 0).encode())
        os._exit(0)
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
print("orphan reparented", os.read(r, 32).decode())
)py"},
};

class PythonProcessTest : public ::testing::TestWithParam<PyCase> {};

TEST_P(PythonProcessTest, SameOutputAsNative) { ExpectSameAsNative(GetParam().script); }

INSTANTIATE_TEST_SUITE_P(Python, PythonProcessTest, ::testing::ValuesIn(kPythonCases),
                         [](const ::testing::TestParamInfo<PyCase>& info) {
                           return std::string(info.param.name);
                         });

// multiprocessing's forkserver listens on a pathname AF_UNIX socket: a VFS
// path whose socket inode lives in the store.
TEST(ProcessTest, MultiprocessingForkserver) {
  constexpr const char* kScript = R"py(import multiprocessing as mp, socket, sys
def square(x):
    return x * x
if __name__ == "__main__":
    with mp.get_context("forkserver").Pool(2) as pool:
        print("pool", sum(pool.map(square, range(100))))
)py";
  ProcessResult r = SandboxScript(kScript, {"--timeout", "60"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  ProcessResult native = NativeScript(kScript);
  EXPECT_EQ(r.out, native.out);
}

// fork + exec + exit from 8 threads at once: every child must see the cwd and
// umask it inherited or set between fork and exec (the sentry's task table
// against the kernel's). 1,000 children here (about 5 s on 2 cores, as
// natively); bench/README.md runs 10,000.
TEST(ProcessTest, ForkExecRaceKeepsCwdAndUmask) {
  ProcessResult r = SentryIn("/tmp",
                             {"--timeout", "120", "--pids-limit", "256", "--copy",
                              std::string(FORK_EXEC_RACE) + ":/tmp/fork_exec_race"},
                             {"/tmp/fork_exec_race", "8", "125"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "children=1000 failures=0\n") << r.err;
}

// An i386 or x32 image is refused with ENOEXEC, as by a kernel without IA32
// emulation (natively this host runs them): the exec fails cleanly in the
// guest, which goes on, and the run's exit code is the guest's own. Before,
// the exec check read the i386 stack as x86-64's, killed the task and ended
// the whole run with 125 (Debian's ldd tries /lib/ld-linux.so.2 so).
TEST(ProcessTest, ForeignElfImagesAreRefusedWithEnoexec) {
  ProcessResult r = SandboxScript(R"py(import errno, os, struct, subprocess, sys
def image(klass, machine):
    base = 0x08048000
    code = bytes.fromhex("b80100000031dbcd80")  # exit(0) through int 0x80
    size = 52 + 32 + len(code)
    ident = b"\x7fELF" + bytes([klass, 1, 1]) + bytes(9)
    ehdr = struct.pack("<16sHHIIIIIHHHHHH", ident, 2, machine, 1, base + 84, 52, 0, 0,
                       52, 32, 1, 0, 0, 0)
    phdr = struct.pack("<8I", 1, 0, base, base, size, size, 5, 0x1000)
    return ehdr + phdr + code
for name, klass, machine in (("i386", 1, 3), ("x32", 1, 62), ("arm64", 2, 183)):
    path = os.path.join(sys.argv[1], name)
    with open(path, "wb") as f:
        f.write(image(klass, machine))
    os.chmod(path, 0o755)
    try:
        subprocess.run([path])
        print(name, "ran")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
print("after", subprocess.run(["/bin/true"]).returncode)
)py");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "i386 ENOEXEC\nx32 ENOEXEC\narm64 ENOEXEC\nafter 0\n") << r.err;
}

// An i386 program named as the run's command (Debian's /lib/ld-linux.so.2
// with libc6-i386): refused before the start with the shell's words and its
// code, 126 ("found but cannot be run"), as on a kernel without IA32
// emulation; from a shell, the shell's own message and 126.
TEST(ProcessTest, AForeignProgramAsTheCommandIsAnExecFormatError) {
  // The ELF header and one program header of an i386 executable (no code
  // needed: it never runs). e_machine EM_386 at 18, ELFCLASS32 at 4.
  std::string image(84, '\0');
  const unsigned char ident[] = {0x7f, 'E', 'L', 'F', 1, 1, 1};
  std::memcpy(image.data(), ident, sizeof(ident));
  image[16] = 2;  // ET_EXEC
  image[18] = 3;  // EM_386
  image[20] = 1;  // EV_CURRENT
  TempDir dir;
  std::string host = dir.Write("ld32", image, 0755);
  ProcessResult r = SentryIn("/tmp", {"--copy", host + ":/tmp/ld32"}, {"/tmp/ld32", "--version"});
  EXPECT_EQ(r.exit_code, 126) << Describe(r);
  EXPECT_NE(r.err.find("/tmp/ld32: Exec format error"), std::string::npos) << r.err;
  ProcessResult sh = SentryIn("/tmp", {"--copy", host + ":/tmp/ld32"},
                              {"/bin/sh", "-c", "/tmp/ld32 --version; echo status=$?"});
  EXPECT_EQ(sh.exit_code, 0) << Describe(sh);
  EXPECT_EQ(sh.out, "status=126\n") << sh.err;
  EXPECT_NE(sh.err.find("Exec format error"), std::string::npos) << sh.err;
}

// ldd tries every loader of RTLDLIST, /lib/ld-linux.so.2 among them where
// libc6-i386 is installed: it must print the libraries and succeed.
TEST(ProcessTest, LddOfASixtyFourBitProgram) {
  ProcessResult r = SentryIn("/tmp", {"--timeout", "30"}, {"/usr/bin/ldd", "/bin/true"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("libc.so.6"), std::string::npos) << r.out;
}

// A tmux-like server: it lets a client in only if the client's SO_PEERCRED
// names the server's own uid, and it knows each client by the pid the
// credentials name. Every client, not only the first, must be let in, with
// its own pid: the sentry makes the connect, but the peer is the guest
// process that asked.
TEST(ProcessTest, UnixServerKnowsEachClientByItsCredentials) {
  const std::string script = R"py(import os, socket, struct, sys
path = os.path.join(sys.argv[1], "server.sock")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(8)
kids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(path)
        c.sendall(struct.pack("i", os.getpid()))
        c.recv(1)
        os._exit(0)
    kids.append(pid)
for i in range(4):
    conn, _ = srv.accept()
    pid, uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    said = struct.unpack("i", conn.recv(4))[0]
    allowed = uid == os.getuid() and gid == os.getgid()
    print("client", "allowed" if allowed else "access not allowed",
          "pid-matches" if pid == said and pid in kids else "pid %d said %d" % (pid, said))
    conn.send(b"x")
for pid in kids:
    os.waitpid(pid, 0)
)py";
  ProcessResult native = NativeScript(script);
  ASSERT_EQ(native.exit_code, 0) << Describe(native);
  ProcessResult r = SandboxScript(script);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, native.out) << r.err;
  std::string want;
  for (int i = 0; i < 4; ++i) want += "client allowed pid-matches\n";
  EXPECT_EQ(r.out, want);
}

}  // namespace
}  // namespace sentry::testing
