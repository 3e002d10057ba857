// /proc's socket tables and per-process files show the sandbox alone: a host
// listener, a host unix socket, another sandbox's sockets and the store's
// host directory never appear, while the sandbox's own sockets do.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"
#include "tests/util/subprocess.h"

namespace sentry::security {
namespace {

extern "C" char** environ;

// A sandbox left running in the background: its first line of output says
// it is ready; it ends when its stdin closes.
class BackgroundSandbox {
 public:
  explicit BackgroundSandbox(const std::string& code) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) return;
    std::vector<std::string> argv =
        sentry::testing::SentryRunArgv({}, {"/usr/bin/python3", "-c", code});
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    FILE* f = fdopen(out[0], "r");
    char line[256] = {};
    if (f && fgets(line, sizeof(line), f)) ready_ = line;
    if (f) fclose(f);
  }
  ~BackgroundSandbox() {
    if (stdin_ >= 0) close(stdin_);
    if (pid_ > 0) {
      int status;
      for (int i = 0; i < 100 && waitpid(pid_, &status, WNOHANG) == 0; ++i) usleep(50000);
      if (waitpid(pid_, &status, WNOHANG) == 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
      }
    }
  }
  const std::string& ready() const { return ready_; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  std::string ready_;
};

// What a sandbox binds: a unix path, an abstract name and (where it has a
// network) a TCP port, all named by token; it prints "ready PORT".
std::string Binder(const std::string& token) {
  return R"PY(import os, socket, sys
token = ")PY" +
         token + R"PY("
u = socket.socket(socket.AF_UNIX); u.bind("/tmp/" + token + ".sock"); u.listen()
try:  # refused without namespaces (no abstract names there)
    a = socket.socket(socket.AF_UNIX); a.bind("\0" + token); a.listen()
except OSError:
    pass
port = 0
try:
    t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(); port = t.getsockname()[1]
except OSError:
    pass
print("ready", port, flush=True)
sys.stdin.read()
)PY";
}

// Prints every file of /proc/net and /proc/self/net, after binding its own
// sockets as Binder does.
std::string Dumper(const std::string& token) {
  return R"PY(import os, socket
token = ")PY" +
         token + R"PY("
u = socket.socket(socket.AF_UNIX); u.bind("/tmp/" + token + ".sock"); u.listen()
try:
    t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen()
    print("own_port %04X" % t.getsockname()[1])
except OSError:
    print("own_port none")
for d in ("/proc/net", "/proc/self/net"):
    for n in sorted(os.listdir(d)):
        print("FILE", d + "/" + n)
        print(open(d + "/" + n).read())
)PY";
}

std::string Hex(int port) {
  char buf[16];
  snprintf(buf, sizeof(buf), ":%04X", port);
  return buf;
}

TEST(ProcNet, ShowsNoHostSocketAndNoOtherSandboxsSockets) {
  std::string host_token = "sentry-host-" + RandomToken(12);
  std::string a_token = "sentry-a-" + RandomToken(12);
  std::string b_token = "sentry-b-" + RandomToken(12);
  // The host's: a TCP listener on 127.0.0.1 and a unix socket, bound and
  // abstract, each named by a token.
  int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(tcp, reinterpret_cast<sockaddr*>(&in), sizeof(in)), 0);
  ASSERT_EQ(listen(tcp, 1), 0);
  socklen_t len = sizeof(in);
  getsockname(tcp, reinterpret_cast<sockaddr*>(&in), &len);
  int host_port = ntohs(in.sin_port);
  std::string host_path = "/tmp/" + host_token + ".sock";
  int ux = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  strncpy(un.sun_path, host_path.c_str(), sizeof(un.sun_path) - 1);
  ASSERT_EQ(bind(ux, reinterpret_cast<sockaddr*>(&un), sizeof(un)), 0);
  ASSERT_EQ(listen(ux, 1), 0);
  int ab = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un abs{};
  abs.sun_family = AF_UNIX;
  memcpy(abs.sun_path + 1, host_token.data(), host_token.size());
  ASSERT_EQ(bind(ab, reinterpret_cast<sockaddr*>(&abs),
                 offsetof(sockaddr_un, sun_path) + 1 + host_token.size()),
            0);
  ASSERT_EQ(listen(ab, 1), 0);

  BackgroundSandbox a(Binder(a_token));
  ASSERT_EQ(a.ready().rfind("ready ", 0), 0u) << a.ready();
  int a_port = std::atoi(a.ready().c_str() + 6);

  ProcessResult b = RunPy(Dumper(b_token), {"--timeout", "30"});
  close(tcp);
  close(ux);
  close(ab);
  unlink(host_path.c_str());
  ASSERT_EQ(b.exit_code, 0) << Describe(b);
  // Its own sockets are there: the tables are read, not emptied.
  EXPECT_NE(b.out.find("/tmp/" + b_token + ".sock"), std::string::npos) << b.out;
  size_t own = b.out.find("own_port ");
  ASSERT_NE(own, std::string::npos);
  std::string own_port = b.out.substr(own + 9, 4);
  if (own_port != "none") {
    EXPECT_NE(b.out.find(":" + own_port), std::string::npos) << b.out;
  }
  // Nothing of the host's or of the other sandbox's.
  for (const std::string& m : {host_token, a_token, std::string("sentry-store")}) {
    EXPECT_EQ(b.out.find(m), std::string::npos) << m << " in:\n" << b.out;
  }
  EXPECT_EQ(b.out.find("0100007F" + Hex(host_port)), std::string::npos) << b.out;
  if (a_port) {
    EXPECT_EQ(b.out.find("0100007F" + Hex(a_port)), std::string::npos) << b.out;
  }
}

// The per-process files a guest reads of itself name no host pid and no
// host path: a file mapped from /tmp and a binary run from /tmp show their
// sandbox paths (without a mount namespace the store is a host directory).
TEST(ProcNet, OwnFilesNameNoHostPidOrPath) {
  ProcessResult r = RunPy(R"PY(import mmap, os, shutil, subprocess
open("/tmp/mapped.bin", "wb").write(b"x" * 8192)
f = open("/tmp/mapped.bin", "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
shutil.copy("/bin/cat", "/tmp/cat2"); os.chmod("/tmp/cat2", 0o755)
me = "/proc/self/"
out = {}
for n in ("maps", "smaps", "sched", "stat", "status", "wchan", "io", "limits", "statm",
          "smaps_rollup", "oom_score_adj", "environ"):
    out[n] = open(me + n, "rb").read().decode(errors="replace")
for fd in os.listdir(me + "fdinfo"):
    try:
        out["fdinfo" + fd] = open(me + "fdinfo/" + fd).read()
    except OSError:
        pass
out["child_maps"] = subprocess.run(["/tmp/cat2", "/proc/self/maps"], capture_output=True,
                                   text=True).stdout
for k, v in out.items():
    print("FILE", k)
    print(v)
print("PID", os.getpid())
print("SCHED_HEAD", out["sched"].splitlines()[0])
)PY",
                          {"--timeout", "30"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out.find("sentry-store"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" /tmp/mapped.bin\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" /tmp/cat2\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("TracerPid:\t0\n") != std::string::npos, true) << r.out;
  // The sched header names the sandbox's pid, as getpid() does.
  size_t pid_at = r.out.find("\nPID ");
  ASSERT_NE(pid_at, std::string::npos);
  std::string pid = r.out.substr(pid_at + 5, r.out.find('\n', pid_at + 5) - pid_at - 5);
  EXPECT_NE(r.out.find("SCHED_HEAD python3.11 (" + pid + ", #threads: 1)"), std::string::npos)
      << r.out;
  // No fdinfo row of watches, locks or epoll targets with the host's inode.
  EXPECT_EQ(r.out.find("sdev:"), std::string::npos) << r.out;
  // The clocks of the scheduler (they would tell the host's uptime).
  EXPECT_EQ(r.out.find("se.exec_start"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sentry::security
