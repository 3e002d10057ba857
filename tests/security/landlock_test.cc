// The Landlock wall (loader/landlock.h): the guest's own domain, with and
// without namespaces, and the sentry's non-dumpability.
//
// Every call that Landlock's file-system and TCP rights cover is trapped by
// the seccomp wall first (the rule of the table), so no guest call shows
// those rights at work: they hold should a trap ever be bypassed, and the
// tests below show that everything that worked still works under them. The
// scopes are seen at work: a signal the kernel sends for the guest (kill of
// pid 1 in its namespace, kill(-1) without one) reaches no process outside
// the domain, even one the kernel's uid check would let through.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"
#include "tests/util/json_read.h"

namespace sentry::security {
namespace {

using sentry::testing::At;
using sentry::testing::ParseJson;
using sentry::testing::Str;

int KernelAbi() {
  long v = syscall(444, nullptr, 0, 1u);  // LANDLOCK_CREATE_RULESET_VERSION
  return v > 0 ? static_cast<int>(v) : 0;
}

#define SKIP_WITHOUT_LANDLOCK() \
  if (KernelAbi() < 6) GTEST_SKIP() << "this kernel has no Landlock scopes (ABI 6+)"

std::vector<std::string> Walls(const ProcessResult& r) {
  std::vector<std::string> walls;
  std::optional<nlohmann::json> v = ParseJson(r.out);
  if (!v) return walls;
  for (const nlohmann::json& w : At(*v, "walls")) walls.push_back(Str(w));
  return walls;
}

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// A child process with a pipe on its stdin and one on its stdout and stderr,
// optionally as a uid of its own.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv, uid_t uid = static_cast<uid_t>(-1)) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      dup2(out[1], 2);
      if (uid != static_cast<uid_t>(-1) &&
          (setgroups(0, nullptr) < 0 || setresgid(uid, uid, uid) < 0 ||
           setresuid(uid, uid, uid) < 0)) {
        _exit(126);
      }
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    in_ = in[1];
    out_ = out[0];
  }
  ~Child() {
    if (in_ >= 0) close(in_);
    if (out_ >= 0) close(out_);
    if (pid_ > 0 && !waited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void Write(const std::string& s) { (void)!write(in_, s.data(), s.size()); }
  std::string ReadLine() {
    std::string line;
    char c;
    while (read(out_, &c, 1) == 1 && c != '\n') line.push_back(c);
    return line;
  }
  // Closes stdin, reads the rest of the output, and waits for the exit.
  std::string Finish() {
    close(in_);
    in_ = -1;
    std::string all;
    char buf[4096];
    ssize_t n;
    while ((n = read(out_, buf, sizeof(buf))) > 0) all.append(buf, n);
    waitpid(pid_, nullptr, 0);
    waited_ = true;
    return all;
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  bool waited_ = false;
};

TEST(Landlock, EveryRunNamesTheWallWithItsAbi) {
  int abi = KernelAbi();
  if (abi == 0) GTEST_SKIP() << "this kernel has no Landlock";
  ProcessResult with = sentry::testing::RunSentry({"--json"}, {"/bin/true"});
  ASSERT_EQ(with.exit_code, 0) << Describe(with);
  EXPECT_TRUE(Has(Walls(with), "landlock-abi" + std::to_string(abi))) << with.out;
  ProcessResult without = sentry::testing::RunSentry({"--json", "--no-landlock"}, {"/bin/true"});
  ASSERT_EQ(without.exit_code, 0) << Describe(without);
  for (const std::string& w : Walls(without)) EXPECT_EQ(w.find("landlock"), std::string::npos);
  ProcessResult check =
      sentry::testing::RunProcess({sentry::testing::SentryBinary(), "check", "--json"});
  EXPECT_NE(check.out.find("\"landlock-abi" + std::to_string(abi) + "\""), std::string::npos)
      << check.out;
}

// With namespaces, kill is native (the pid namespace confines it) and pid 1
// is the loader, outside the guest's domain. As --root the guest has pid 1's
// uid, so the kernel's own check would let the signal through: the scope
// refuses it.
TEST(Landlock, TheSignalScopeRefusesPidOneWhichTheUidCheckAllows) {
  if (SeccompOnly()) GTEST_SKIP() << "pid 1 is the host's init without namespaces";
  SKIP_WITHOUT_LANDLOCK();
  const std::string body = R"PY(
t("kill 1 0", lambda: os.kill(1, 0))
t("kill 1 TERM", lambda: os.kill(1, 15))
)PY";
  Results with = ParseResults(RunPy(body, {"--root"}).out);
  EXPECT_EQ(Code(with, "kill 1 0"), "EPERM");
  EXPECT_EQ(Code(with, "kill 1 TERM"), "EPERM");
  Results without = ParseResults(RunPy(body, {"--root", "--no-landlock"}).out);
  EXPECT_EQ(Code(without, "kill 1 0"), "OK");
}

// What the kernel opens as the guest (exec, its PT_INTERP, a pty's peer) and
// what the sentry does for it (sockets, paths) works under the domain.
TEST(Landlock, WhatWorkedKeepsWorking) {
  std::string body = R"PY(
import subprocess, shutil, socket, json, decimal, sqlite3, email.parser, xml.dom.minidom
t("imports", lambda: 1)
def script():
    open("/tmp/s.sh", "w").write("#!/bin/sh\necho from $0 $1\n")
    os.chmod("/tmp/s.sh", 0o755)
    return subprocess.run(["/tmp/s.sh", "x"], capture_output=True).stdout
t("in-memory script", script)
def binary():
    shutil.copy("/usr/bin/true", "/tmp/true")
    os.chmod("/tmp/true", 0o755)
    return subprocess.run(["/tmp/true"]).returncode
t("in-memory binary", binary)
t("pipeline", lambda: subprocess.run("ls /usr | sort | head -2 | wc -l", shell=True,
                                     capture_output=True).stdout)
def unix_path():
    s = socket.socket(socket.AF_UNIX); s.bind("/tmp/u.sock"); s.listen()
    c = socket.socket(socket.AF_UNIX); c.connect("/tmp/u.sock"); a, _ = s.accept()
    c.send(b"u"); return a.recv(1)
t("unix path", unix_path)
if os.environ.get("NS") == "1":
    def tcp():
        s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
        c = socket.create_connection(s.getsockname()); a, _ = s.accept()
        c.send(b"t"); return a.recv(1)
    t("tcp", tcp)
    def abstract():
        s = socket.socket(socket.AF_UNIX); s.bind("\0ll-test"); s.listen()
        c = socket.socket(socket.AF_UNIX); c.connect("\0ll-test"); return 1
    t("abstract", abstract)
    def pty():
        import termios
        m, s = os.openpty()
        return termios.tcgetattr(s)[0] >= 0
    t("pty", pty)
)PY";
  std::vector<std::string> flags = {"--env", SeccompOnly() ? "NS=0" : "NS=1"};
  ProcessResult r = RunPy(body, flags);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Code(res, "imports"), "OK") << r.out;
  EXPECT_EQ(Value(res, "in-memory script"), "b'from /tmp/s.sh x\\n'") << r.out;
  EXPECT_EQ(Value(res, "in-memory binary"), "0") << r.out;
  EXPECT_EQ(Value(res, "pipeline"), "b'2\\n'") << r.out;
  EXPECT_EQ(Value(res, "unix path"), "b'u'") << r.out;
  if (!SeccompOnly()) {
    EXPECT_EQ(Value(res, "tcp"), "b't'") << r.out;
    EXPECT_EQ(Value(res, "abstract"), "1") << r.out;
    EXPECT_EQ(Value(res, "pty"), "True") << r.out;
  }
}

// The table refuses landlock_* to the guest whatever it asks (a domain of its
// own would change nothing of ours, but its ABI query is a host fingerprint).
TEST(Landlock, TheGuestCannotUseLandlockItself) {
  ProcessResult r = RunPy(R"PY(
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def sc(*a):
    v = libc.syscall(*[ctypes.c_long(x) for x in a])
    if v < 0: raise OSError(ctypes.get_errno(), "")
    return v
t("abi", lambda: sc(444, 0, 0, 1))
t("restrict", lambda: sc(446, 0, 0))
)PY");
  Results res = ParseResults(r.out);
  // EOPNOTSUPP, which Python names by its twin ENOTSUP.
  EXPECT_EQ(Code(res, "abi"), "ENOTSUP") << r.out;
  EXPECT_EQ(Code(res, "restrict"), "ENOTSUP") << r.out;
}

// Without namespaces the guest runs as a host uid (here the run's own; for a
// rootless run, the caller's), and kill(-1) is the kernel's to answer: every
// process of that uid. A host process of the same uid outside the sandbox
// gets nothing under the signal scope; without the domain, it gets the
// signal (the rootless run's risk the scope closes).
TEST(Landlock, WithoutNamespacesKillAllReachesNoHostProcessOfTheGuestsUid) {
  SKIP_WITHOUT_LANDLOCK();
  for (bool landlock : {true, false}) {
    std::vector<std::string> argv = {sentry::testing::SentryBinary(), "run", "--no-namespaces"};
    if (!landlock) argv.push_back("--no-landlock");
    // First SIGIO (as SIGTERM) through an F_SETOWN owner, which is native
    // only under the scope; then kill(-1).
    for (const char* a : {"--", "/usr/bin/python3", "-c",
                          "import os, sys, fcntl\n"
                          "pid = int(sys.stdin.readline())\n"
                          "r, w = os.pipe()\n"
                          "try:\n"
                          "  fcntl.fcntl(r, fcntl.F_SETOWN, pid); fcntl.fcntl(r, 10, 15)\n"
                          "  fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC); os.write(w, b'x')\n"
                          "  print('setown OK', flush=True)\n"
                          "except OSError as e: print('setown', e.errno, flush=True)\n"
                          "try:\n  os.kill(-1, 15); print('sent', flush=True)\n"
                          "except OSError as e: print('kill', e.errno, flush=True)\n"
                          // Time for the target's handler before the run's
                          // end kills every process of the uid.
                          "import time; time.sleep(0.5)\n"}) {
      argv.push_back(a);
    }
    Child sentry(argv);
    ASSERT_GT(sentry.pid(), 0);
    // The run's guest uid (sentry/run/seccomp_only.cc: SeccompOnlyGuestId).
    uid_t guest_uid = 2000000000u + 0x10000u + static_cast<uid_t>(sentry.pid());
    Child target({"/usr/bin/python3", "-c",
                  "import signal, time\n"
                  "signal.signal(15, lambda *a: print('TERM', flush=True))\n"
                  "print('ready', flush=True)\n"
                  "time.sleep(30)\n"},
                 guest_uid);
    ASSERT_EQ(target.ReadLine(), "ready");
    sentry.Write(std::to_string(target.pid()) + "\n");
    std::string out = sentry.Finish();
    EXPECT_NE(out.find("sent"), std::string::npos) << out;
    EXPECT_NE(out.find(landlock ? "setown OK" : "setown 1"), std::string::npos) << out;
    // The run's end kills every process of its uid (SIGKILL): the target's
    // output ends there.
    std::string seen = target.Finish();
    if (landlock) {
      EXPECT_EQ(seen.find("TERM"), std::string::npos) << seen;
    } else {
      EXPECT_NE(seen.find("TERM"), std::string::npos) << "the control: " << seen;
    }
  }
}

// Without namespaces the kernel finds an exec's PT_INTERP in the host's tree.
// An interpreter that lies outside the lower roots and the store: under the
// domain, the kernel's own open of it fails (EACCES, nothing runs); without
// it, the sentry's check at the exec event kills the guest (SIGKILL) before
// its first instruction. The file-system rights at work, seen from a guest.
TEST(Landlock, WithoutNamespacesTheKernelCannotOpenAHostOnlyInterpreter) {
  SKIP_WITHOUT_LANDLOCK();
  TempDir dir("/tmp/ll-interp-");
  chmod(dir.path().c_str(), 0755);
  std::string host = dir.path() + "/i";
  ASSERT_EQ(sentry::testing::RunProcess({"/bin/cp", "/lib64/ld-linux-x86-64.so.2", host}).exit_code,
            0);
  const std::string code = R"PY(
import os, struct, sys
host = sys.argv[1]
d = bytearray(open("/usr/bin/true", "rb").read())
end = len(d)
d += host.encode() + b"\0"
phoff, = struct.unpack_from("<Q", d, 32)
phentsize, phnum = struct.unpack_from("<HH", d, 54)
for i in range(phnum):
    at = phoff + i * phentsize
    if struct.unpack_from("<I", d, at)[0] == 3:
        struct.pack_into("<Q", d, at + 8, end)
        struct.pack_into("<Q", d, at + 32, len(host) + 1)
open("/tmp/pt", "wb").write(d)
os.chmod("/tmp/pt", 0o755)
pid = os.fork()
if pid == 0:
    try: os.execv("/tmp/pt", ["pt"])
    except OSError as e: print("exec", e.errno, flush=True); os._exit(3)
_, status = os.waitpid(pid, 0)
print("status", status, flush=True)
)PY";
  for (bool landlock : {true, false}) {
    std::vector<std::string> flags = {"--no-namespaces"};
    if (!landlock) flags.push_back("--no-landlock");
    ProcessResult r = sentry::testing::RunProcess(
        sentry::testing::SentryRunArgv(flags, {"/usr/bin/python3", "-c", code, host}));
    if (landlock) {
      EXPECT_NE(r.out.find("exec 13"), std::string::npos) << Describe(r);  // EACCES
    } else {
      EXPECT_EQ(r.out.find("exec 13"), std::string::npos) << "the control: " << Describe(r);
      EXPECT_NE(r.out.find("status 9"), std::string::npos) << "the control: " << Describe(r);
    }
  }
}

// Without namespaces: the sentry's own pid and a host abstract unix socket
// are out of the guest's reach (the trap refuses both; the scopes would too).
TEST(Landlock, WithoutNamespacesTheSentryAndHostAbstractSocketsAreOutOfReach) {
  std::string name = "sentry-landlock-test-" + std::to_string(getpid());
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path + 1, name.data(), name.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  Child sentry({sentry::testing::SentryBinary(), "run", "--no-namespaces", "--", "/usr/bin/python3",
                "-c",
                "import os, sys, socket, errno\n"
                "pid, name = sys.stdin.readline().split()\n"
                "def t(n, f):\n"
                "  try: f(); print(n, 'OK', flush=True)\n"
                "  except OSError as e: print(n, errno.errorcode[e.errno], flush=True)\n"
                "t('kill0', lambda: os.kill(int(pid), 0))\n"
                "t('kill9', lambda: os.kill(int(pid), 9))\n"
                "t('killppid', lambda: os.kill(os.getppid(), 9))\n"
                "t('abstract', lambda: socket.socket(socket.AF_UNIX).connect('\\0' + name))\n"});
  ASSERT_GT(sentry.pid(), 0);
  sentry.Write(std::to_string(sentry.pid()) + " " + name + "\n");
  std::string out = sentry.Finish();
  EXPECT_NE(out.find("kill0 ESRCH"), std::string::npos) << out;
  EXPECT_NE(out.find("kill9 ESRCH"), std::string::npos) << out;
  EXPECT_NE(out.find("killppid ESRCH"), std::string::npos) << out;
  EXPECT_EQ(out.find("abstract OK"), std::string::npos) << out;
  EXPECT_LT(accept(listener, nullptr, nullptr), 0);  // nothing came
  close(listener);
}

// The sentry is not dumpable: a process of its own uid can neither ptrace it
// nor read its memory, while it can do both to a process of that uid that is
// (the control). Run as an unprivileged uid, where the kernel's uid check
// alone would allow it.
TEST(Landlock, ASentryOfTheCallersUidCannotBeTracedOrRead) {
  uid_t uid = 2100000000u + static_cast<uid_t>(getpid());
  Child mcp({sentry::testing::SentryBinary(), "mcp"}, uid);  // waits on its stdin
  Child control({"/bin/sleep", "30"}, uid);
  usleep(300 * 1000);
  auto probe = [uid](pid_t target) {
    int fds[2];
    if (pipe(fds) < 0) return std::string("pipe");
    pid_t p = fork();
    if (p == 0) {
      if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0) _exit(126);
      char byte;
      iovec local{&byte, 1}, remote{reinterpret_cast<void*>(0x1000), 1};
      int read_err = process_vm_readv(target, &local, 1, &remote, 1, 0) < 0 ? errno : 0;
      int trace_err = ptrace(PTRACE_SEIZE, target, nullptr, nullptr) < 0 ? errno : 0;
      int open_err =
          open(("/proc/" + std::to_string(target) + "/mem").c_str(), O_RDONLY) < 0 ? errno : 0;
      std::string s = std::string(strerrorname_np(read_err) ?: "0") + " " +
                      (strerrorname_np(trace_err) ?: "0") + " " +
                      (strerrorname_np(open_err) ?: "0");
      (void)!write(fds[1], s.data(), s.size());
      _exit(0);
    }
    close(fds[1]);
    char buf[128] = {};
    (void)!read(fds[0], buf, sizeof(buf) - 1);
    close(fds[0]);
    waitpid(p, nullptr, 0);
    return std::string(buf);
  };
  EXPECT_EQ(probe(mcp.pid()), "EPERM EPERM EACCES");
  EXPECT_EQ(probe(control.pid()), "EFAULT 0 0");  // a bad address, but allowed
}

}  // namespace
}  // namespace sentry::security
