// `sentry exec` through the runtime's command line, as an engine drives it:
// a second process in a running container sees the first one's files, gets
// its env, cwd and user, returns its exit code (or, detached, the pid file's
// process does), stands under the same walls, and ends with the container.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/oci/oci_util.h"

namespace sentry::testing {
namespace {

class OciExec : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
  void SetUp() override {
    std::string why;
    rootfs_ = TestRootfs(&why);
    ASSERT_FALSE(rootfs_.empty()) << why;
    root_ = dir_.path() + "/state";
    log_ = dir_.path() + "/log.json";
  }
  void TearDown() override {
    for (const std::string& id : started_) Sentry({"delete", "--force", id});
  }
  std::vector<std::string> Argv(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {SentryBinary(), "--root", root_, "--log", log_};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  ProcessResult Sentry(const std::vector<std::string>& args, const std::string& input = "") {
    return RunProcess(Argv(args), input, 60);
  }
  // A running container whose process wrote /tmp/first and sleeps.
  void StartContainer(const std::string& id, const std::string& extra_process = "") {
    std::string b = dir_.path() + "/" + id + "-bundle";
    WriteBundle(b, rootfs_, {"sh", "-c", "echo from-the-first > /tmp/first; sleep 100"},
                extra_process);
    ASSERT_EQ(SpawnToFiles(Argv({"create", "--bundle", b, "--pid-file", PidFile(id), id}),
                           dir_.path() + "/" + id + ".out", dir_.path() + "/" + id + ".err"),
              0)
        << ReadFile(log_);
    started_.push_back(id);
    ASSERT_EQ(Sentry({"start", id}).exit_code, 0) << ReadFile(log_);
    // The first process has written its file once an exec sees it.
    for (int i = 0; i < 100; ++i) {
      if (Sentry({"exec", id, "test", "-e", "/tmp/first"}).exit_code == 0) return;
      usleep(50 * 1000);
    }
    FAIL() << "the container's file never appeared: " << ReadFile(log_);
  }
  // A detached exec, as the shim runs it: the process keeps the stdio it was
  // given (files here), which outlives the command.
  int Detached(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"exec", "--detach"};
    all.insert(all.end(), args.begin(), args.end());
    return SpawnToFiles(Argv(all), dir_.path() + "/detached.out", dir_.path() + "/detached.err");
  }
  std::string PidFile(const std::string& id) { return dir_.path() + "/" + id + ".pid"; }
  pid_t PidIn(const std::string& path) {
    pid_t pid = 0;
    return absl::SimpleAtoi(ReadFile(path), &pid) ? pid : 0;
  }
  std::string WriteProcess(const std::string& name, const std::string& json) {
    std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << json;
    return path;
  }

  ScratchDir dir_;
  std::string rootfs_, root_, log_;
  std::vector<std::string> started_;
};

TEST_F(OciExec, SeesTheFirstProcessFilesAndReturnsItsExitCode) {
  StartContainer("x1");
  ProcessResult cat = Sentry({"exec", "x1", "cat", "/tmp/first"});
  EXPECT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_EQ(cat.out, "from-the-first\n");
  ProcessResult code = Sentry({"exec", "x1", "sh", "-c", "echo out; echo err >&2; exit 7"});
  EXPECT_EQ(code.exit_code, 7);
  EXPECT_EQ(code.out, "out\n");
  EXPECT_EQ(code.err, "err\n");
  // What an exec writes, the next one (and the container) sees.
  EXPECT_EQ(Sentry({"exec", "x1", "sh", "-c", "echo second > /tmp/second"}).exit_code, 0);
  EXPECT_EQ(Sentry({"exec", "x1", "cat", "/tmp/second"}).out, "second\n");
  ProcessResult in = Sentry({"exec", "x1", "cat"}, "through stdin\n");
  EXPECT_EQ(in.out, "through stdin\n");
  ProcessResult sig = Sentry({"exec", "x1", "sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(sig.exit_code, 128 + SIGTERM);
  ProcessResult missing = Sentry({"exec", "x1", "no-such-program"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(ReadFile(log_).find("executable file not found"), std::string::npos);
  // Both processes are the container's (ps lists them), and the container
  // still runs.
  ProcessResult ps = Sentry({"ps", "--format", "json", "x1"});
  EXPECT_EQ(nlohmann::json::parse(ps.out).size(), 2u) << ps.out;  // sh and its sleep
}

// --user NAME[:GROUP], as runc: names from the container's /etc/passwd and
// /etc/group (the test rootfs has root, sandbox and nobody).
TEST_F(OciExec, UserNamesResolveAgainstTheRootfs) {
  StartContainer("x6", R"("user":{"uid":1000,"gid":1000})");
  struct Case {
    const char* user;
    const char* ids;
  } cases[] = {{"sandbox", "1000 1000\n"},
               {"root", "0 0\n"},
               {"sandbox:root", "1000 0\n"},
               {"nobody:nogroup", "65534 65534\n"},
               {"1000", "1000 1000\n"}};
  for (const Case& c : cases) {
    ProcessResult r =
        Sentry({"exec", "--user", c.user, "x6", "sh", "-c", "echo $(id -u) $(id -g)"});
    EXPECT_EQ(r.exit_code, 0) << c.user << ": " << r.err << ReadFile(log_);
    EXPECT_EQ(r.out, c.ids) << c.user;
  }
  ProcessResult missing = Sentry({"exec", "--user", "nosuch", "x6", "true"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(ReadFile(log_).find("no user nosuch in the container's /etc/passwd"), std::string::npos)
      << ReadFile(log_);
}

TEST_F(OciExec, EnvCwdAndUserFromFlagsAndFromAProcessFile) {
  StartContainer("x2", R"("env": ["PATH=/usr/bin:/bin", "FROM_CONFIG=yes"])");
  ProcessResult flags = Sentry({"exec", "--env", "FOO=bar", "-e", "FROM_CONFIG=over", "--cwd",
                                "/tmp", "--user", "65534:65534", "x2", "sh", "-c",
                                "echo $FOO $FROM_CONFIG; pwd; id -u; id -g; touch mine; "
                                "stat -c %u mine"});
  EXPECT_EQ(flags.exit_code, 0) << flags.err << ReadFile(log_);
  EXPECT_EQ(flags.out, "bar over\n/tmp\n65534\n65534\n65534\n");
  std::string proc = WriteProcess("p.json", R"({
    "args": ["sh", "-c", "echo $ONLY; pwd; id -u"],
    "env": ["PATH=/usr/bin", "ONLY=from-file"],
    "cwd": "/home/sandbox",
    "user": {"uid": 0, "gid": 0}
  })");
  ProcessResult file = Sentry({"exec", "--process", proc, "x2"});
  EXPECT_EQ(file.exit_code, 0) << file.err << ReadFile(log_);
  EXPECT_EQ(file.out, "from-file\n/home/sandbox\n0\n");
}

TEST_F(OciExec, DetachedWithAPidFileWhoseProcessExitsWithTheStatus) {
  StartContainer("x3");
  std::string pid_file = dir_.path() + "/exec.pid";
  ProcessResult d =
      Sentry({"exec", "--detach", "--pid-file", pid_file, "x3", "sh", "-c", "sleep 0.3; exit 4"});
  ASSERT_EQ(d.exit_code, 0) << d.err << ReadFile(log_);
  pid_t pid = PidIn(pid_file);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(WaitExit(pid, 30), 4);
  // A signal to the pid file's process reaches the exec'd process.
  ASSERT_EQ(Detached({"--pid-file", pid_file, "x3", "sleep", "100"}), 0);
  pid = PidIn(pid_file);
  ASSERT_GT(pid, 0);
  usleep(100 * 1000);
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitExit(pid, 30), 128 + SIGTERM);
}

TEST_F(OciExec, DeleteForceAndKillEndExecdProcesses) {
  StartContainer("x4");
  std::string pid_file = dir_.path() + "/exec.pid";
  ASSERT_EQ(Detached({"--pid-file", pid_file, "x4", "sleep", "4242"}), 0);
  pid_t exec_pid = PidIn(pid_file);
  ASSERT_GT(exec_pid, 0);
  const std::string marker(
      "sleep\0"
      "4242",
      10);
  EXPECT_EQ(ProcessesWith(marker).size(), 2u);  // the helper and the process
  ProcessResult del = Sentry({"delete", "--force", "x4"});
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_EQ(WaitExit(exec_pid, 30), 128 + SIGKILL);
  EXPECT_EQ(WaitExit(PidIn(PidFile("x4")), 30), 128 + SIGKILL);
  EXPECT_TRUE(ProcessesWith(dir_.path()).empty());
  EXPECT_TRUE(ProcessesWith(marker).empty());

  StartContainer("x5");
  ASSERT_EQ(Detached({"--pid-file", pid_file, "x5", "sleep", "100"}), 0);
  exec_pid = PidIn(pid_file);
  EXPECT_EQ(Sentry({"kill", "x5", "KILL"}).exit_code, 0);
  EXPECT_EQ(WaitExit(exec_pid, 30), 128 + SIGKILL);
}

TEST_F(OciExec, ErrorsNameTheContainerAndTheProblem) {
  ProcessResult unknown = Sentry({"exec", "nosuch", "true"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("nosuch"), std::string::npos) << unknown.err;
  std::string b = dir_.path() + "/stopped-bundle";
  WriteBundle(b, rootfs_, {"true"});
  ASSERT_EQ(SpawnToFiles(Argv({"create", "--bundle", b, "--pid-file", PidFile("x6"), "x6"}),
                         "/dev/null", "/dev/null"),
            0);
  started_.push_back("x6");
  ProcessResult created = Sentry({"exec", "x6", "true"});
  EXPECT_NE(created.exit_code, 0);
  EXPECT_NE(created.err.find("x6"), std::string::npos) << created.err;
  EXPECT_NE(created.err.find("created"), std::string::npos) << created.err;
  ASSERT_EQ(Sentry({"start", "x6"}).exit_code, 0);
  EXPECT_EQ(WaitExit(PidIn(PidFile("x6")), 30), 0);
  ProcessResult stopped = Sentry({"exec", "x6", "true"});
  EXPECT_NE(stopped.exit_code, 0);
  EXPECT_NE(stopped.err.find("x6"), std::string::npos) << stopped.err;
  EXPECT_NE(stopped.err.find("stopped"), std::string::npos) << stopped.err;

  StartContainer("x7");
  struct Case {
    std::string json, error;
  } cases[] = {
      {"not json", "not valid JSON"},
      {"[1]", "not a JSON object"},
      {R"({"args": "sh"})", "args must be an array of strings"},
      {R"({"args": []})", "args must name the program"},
      {R"({"args": ["true"], "env": [1]})", "env must be an array of strings"},
      {R"({"args": ["true"], "cwd": "tmp"})", "cwd must be an absolute path"},
      {R"({"args": ["true"], "user": {"uid": -1}})", "user.uid"},
      {R"({"args": ["true"], "user": {"uid": 0, "additionalGids": "x"}})", "additionalGids"},
      {R"({"args": ["true"], "terminal": "yes"})", "terminal must be true or false"}};
  for (const Case& c : cases) {
    ProcessResult r = Sentry({"exec", "--process", WriteProcess("bad.json", c.json), "x7"});
    EXPECT_NE(r.exit_code, 0) << c.json;
    EXPECT_NE(r.err.find(c.error), std::string::npos) << c.json << ": " << r.err;
  }
  ProcessResult user = Sentry({"exec", "-u", "4321", "x7", "true"});
  EXPECT_NE(user.exit_code, 0);
  EXPECT_NE(user.err.find("4321"), std::string::npos) << user.err;
  ProcessResult cwd = Sentry({"exec", "--cwd", "/no/such/dir", "x7", "true"});
  EXPECT_NE(cwd.exit_code, 0);
  EXPECT_NE(cwd.err.find("/no/such/dir"), std::string::npos) << cwd.err;
  ProcessResult none = Sentry({"exec", "x7"});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("args"), std::string::npos) << none.err;
}

TEST_F(OciExec, TtyGoesToTheConsoleSocket) {
  StartContainer("x9");
  std::string sock_path = dir_.path() + "/console.sock";
  int ls = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock_path.c_str());
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(ls, 1), 0);
  int master = -1;
  std::thread t([&] { master = ReceiveOneFd(ls); });
  std::string pid_file = dir_.path() + "/exec.pid";
  int rc = Detached({"--tty", "--console-socket", sock_path, "--pid-file", pid_file, "x9", "sh",
                     "-c", "test -t 0 && test -t 1 && echo tty-yes; exit 3"});
  t.join();
  close(ls);
  ASSERT_EQ(rc, 0) << ReadFile(log_);
  ASSERT_GE(master, 0);
  EXPECT_EQ(WaitExit(PidIn(pid_file), 30), 3);
  std::string got;
  char buf[256];
  fcntl(master, F_SETFL, O_NONBLOCK);
  ssize_t n;
  while ((n = read(master, buf, sizeof(buf))) > 0) got.append(buf, n);
  close(master);
  EXPECT_NE(got.find("tty-yes"), std::string::npos) << got;
  // A terminal needs a console socket when exec detaches (as runc says).
  ProcessResult no_socket = Sentry({"exec", "-d", "-t", "x9", "true"});
  EXPECT_NE(no_socket.exit_code, 0);
  EXPECT_NE(no_socket.err.find("console socket"), std::string::npos) << no_socket.err;
}

// The exec'd process stands where the first one does: under the seccomp
// filter, traced by the monitor, with no capability, no_new_privs and in the
// sandbox's namespaces; and the exec socket is out of the guest's reach.
TEST_F(OciExec, TheExecdProcessIsAGuestLikeTheFirst) {
  StartContainer("x8");
  std::string pid_file = dir_.path() + "/exec.pid";
  ASSERT_EQ(Detached({"--pid-file", pid_file, "x8", "sleep", "100"}), 0);
  pid_t helper = PidIn(pid_file);
  ASSERT_GT(helper, 0);
  std::string children =
      ReadFile("/proc/" + std::to_string(helper) + "/task/" + std::to_string(helper) + "/children");
  pid_t child = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(children), &child)) << children;
  std::string status = ReadFile("/proc/" + std::to_string(child) + "/status");
  pid_t monitor = PidIn(PidFile("x8"));
  EXPECT_NE(status.find("Seccomp:\t2"), std::string::npos) << status;
  EXPECT_NE(status.find("NoNewPrivs:\t1"), std::string::npos) << status;
  EXPECT_NE(status.find("CapEff:\t0000000000000000"), std::string::npos) << status;
  EXPECT_NE(status.find("CapBnd:\t0000000000000000"), std::string::npos) << status;
  EXPECT_NE(status.find("TracerPid:\t" + std::to_string(monitor) + "\n"), std::string::npos)
      << status;
  for (const char* ns : {"pid", "mnt", "net", "user", "ipc", "uts", "cgroup"}) {
    char a[64] = {}, b[64] = {};
    std::string guest_ns = "/proc/" + std::to_string(child) + "/ns/" + ns;
    ASSERT_GT(readlink(guest_ns.c_str(), a, sizeof(a) - 1), 0);
    std::string self_ns = std::string("/proc/self/ns/") + ns;
    ASSERT_GT(readlink(self_ns.c_str(), b, sizeof(b) - 1), 0);
    EXPECT_STRNE(a, b) << ns;
  }
  std::string sock = root_ + "/x8/exec.sock";
  ASSERT_EQ(access(sock.c_str(), F_OK), 0);
  struct stat st;
  ASSERT_EQ(stat(sock.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // The guest names the socket's host path: the sentry's VFS has no such name.
  ProcessResult reach = Sentry({"exec", "x8", "python3", "-c", R"(
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print("reached")
except OSError as e:
    print("refused", e.errno)
)",
                                sock});
  EXPECT_EQ(reach.exit_code, 0) << reach.err;
  EXPECT_EQ(reach.out.rfind("refused", 0), 0u) << reach.out;
  // It has the sandbox's Landlock domain too, without its scopes (a domain
  // beside the first process's: scoped, it could not signal that one).
  if (syscall(444, nullptr, 0, 1u) > 0) {
    ProcessResult domain = Sentry({"exec", "x8", "python3", "-c", R"(
import os, signal, subprocess
p = subprocess.Popen(["sleep", "30"])
os.kill(p.pid, signal.SIGTERM); print("own child", p.wait())
print("pid 1", os.kill(1, 0))
)"});
    EXPECT_EQ(domain.out, "own child -15\npid 1 None\n") << domain.err;
  }
}

// The exec socket is the engine's (root's), yet what comes over it is bounded
// and checked: an oversized length, junk, a pid outside the sandbox and an
// unknown op are refused, and the container goes on serving execs.
TEST_F(OciExec, TheMonitorRefusesMalformedRequests) {
  StartContainer("xa");
  std::string sock = root_ + "/xa/exec.sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.size(), sizeof(addr.sun_path));
  memcpy(addr.sun_path, sock.data(), sock.size());
  auto ask = [&](const std::string& bytes) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) {
      close(s);
      return std::string("no connection");
    }
    (void)!write(s, bytes.data(), bytes.size());
    shutdown(s, SHUT_WR);
    std::string got;
    char buf[4096];
    ssize_t n;
    while ((n = read(s, buf, sizeof(buf))) > 0) got.append(buf, n);
    close(s);
    return got.size() > 4 ? got.substr(4) : got;
  };
  auto framed = [](const std::string& json) {
    uint32_t len = static_cast<uint32_t>(json.size());
    return std::string(reinterpret_cast<const char*>(&len), 4) + json;
  };
  EXPECT_EQ(ask(std::string("\xff\xff\xff\xff", 4)), "");  // past the bound: no answer
  EXPECT_NE(ask(framed("{not json")).find("not a JSON object"), std::string::npos);
  EXPECT_NE(ask(framed(R"({"op":"format-disk","args":["true"]})")).find("unknown op"),
            std::string::npos);
  EXPECT_NE(ask(framed(R"({"op":"attach","args":["true"],"pid":1,"listener":3})"))
                .find("not in the sandbox"),
            std::string::npos);
  EXPECT_NE(ask(framed(R"({"op":"prepare","args":["true"],"cwd":"relative"})")).find("absolute"),
            std::string::npos);
  EXPECT_NE(ask(framed(R"({"op":"prepare","args":["true"],"groups":[1,2,3,4,5,6,7,8,9,10,11,)"
                       R"(12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,)"
                       R"(35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,)"
                       R"(58,59,60,61,62,63,64,65]})"))
                .find("at most 64"),
            std::string::npos);
  ProcessResult after = Sentry({"exec", "xa", "cat", "/tmp/first"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.out, "from-the-first\n");
}

}  // namespace
}  // namespace sentry::testing
