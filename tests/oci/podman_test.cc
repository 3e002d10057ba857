// podman --runtime sentry: containers from a --rootfs directory, podman's
// storage and run root in a scratch directory, a cgroup parent of the test's
// own (removed at the end). Skipped where podman is not installed (a
// failure under SENTRY_REQUIRE_ENGINES=1).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/oci/oci_util.h"

namespace sentry::testing {
namespace {

constexpr const char* kPodman = "/usr/bin/podman";

class Podman : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir("/tmp");  // podman wants a run root of at most 50 characters
    // Without it podman passes no --log to the runtime (see shared/OCI.md).
    std::ofstream(dir_->path() + "/containers.conf")
        << "[engine]\nruntime_supports_json = [\"sentry\"]\n";
    cgroup_parent_ = "/sentry_oci_podman_" + std::to_string(getpid());
  }
  static void TearDownTestSuite() {
    RunProcess({kPodman, "--root", dir_->path() + "/root", "--runroot", dir_->path() + "/runroot",
                "--storage-driver", "vfs", "rm", "-af"});
    // Engines leave empty cgroups behind: the parent goes, deepest first.
    RunProcess({"/bin/sh", "-c",
                "for c in /sys/fs/cgroup/*" + cgroup_parent_ +
                    "; do [ -d \"$c\" ] && find \"$c\" -depth -type d -exec rmdir {} \\; ; done"});
    delete dir_;
  }
  void SetUp() override {
    if (access(kPodman, X_OK) != 0) SKIP_WITHOUT_ENGINE("podman is not installed");
    std::string why;
    rootfs_ = TestRootfs(&why);
    ASSERT_FALSE(rootfs_.empty()) << why;
  }
  std::vector<std::string> Argv(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "CONTAINERS_CONF=" + dir_->path() + "/containers.conf",
                                     kPodman,
                                     "--root",
                                     dir_->path() + "/root",
                                     "--runroot",
                                     dir_->path() + "/runroot",
                                     "--storage-driver",
                                     "vfs",
                                     "--cgroup-manager",
                                     "cgroupfs",
                                     "--events-backend",
                                     "file",
                                     "--runtime",
                                     runtime_};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  ProcessResult Podman_(const std::vector<std::string>& args, const std::string& input = "") {
    return RunProcess(Argv(args), input, 60);
  }
  // podman run [flags] --rootfs ROOTFS cmd...
  ProcessResult Run(const std::vector<std::string>& flags, const std::vector<std::string>& cmd,
                    const std::string& input = "") {
    // Root here lacks CAP_SYS_RESOURCE: podman's default ulimits (above the
    // hard limits) would be refused by any runtime.
    std::vector<std::string> args = {"run",         "--ulimit",          "nofile=1024:1024",
                                     "--ulimit",    "nproc=32768:32768", "--cgroup-parent",
                                     cgroup_parent_};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--rootfs");
    args.push_back(rootfs_);
    args.insert(args.end(), cmd.begin(), cmd.end());
    return Podman_(args, input);
  }

  // The live processes whose command line names needle, one "pid: cmdline"
  // line each. sentry's own (a monitor, an exec helper) must be gone when
  // podman returns; the engine's (conmon, and podman's `container cleanup`
  // that conmon starts as a container ends) may outlive `podman rm` a little,
  // so they get 3 s.
  static std::string Leftovers(const std::string& needle) {
    std::string left;
    for (int i = 0; i < 60; ++i) {
      left.clear();
      bool sentry = false;
      for (pid_t p : ProcessesWith(needle)) {
        std::string cmd = ReadFile("/proc/" + std::to_string(p) + "/cmdline");
        sentry |= cmd.substr(0, cmd.find('\0')) == SentryBinary();
        std::replace(cmd.begin(), cmd.end(), '\0', ' ');
        left += std::to_string(p) + ": " + cmd + "\n";
      }
      if (left.empty() || sentry) break;
      usleep(50 * 1000);
    }
    return left;
  }
  // The sandbox cgroups sentry made under the test's cgroup parent (none
  // must outlive its container; podman's own empty ones may).
  std::string SentryCgroups() {
    return RunProcess({"/bin/sh", "-c",
                       "for c in /sys/fs/cgroup/*" + cgroup_parent_ +
                           "; do [ -d \"$c\" ] && find \"$c\" -type d -name 'sentry-*'; done"})
        .out;
  }

  static ScratchDir* dir_;
  static std::string cgroup_parent_;
  std::string rootfs_;
  std::string runtime_ = SentryBinary();  // podman --runtime
};

ScratchDir* Podman::dir_ = nullptr;
std::string Podman::cgroup_parent_;

TEST_F(Podman, RunPrintsAndReturnsTheExitCode) {
  ProcessResult r =
      Run({"--rm"}, {"python3", "-c", "import sys; print('hello from python'); sys.exit(7)"});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_EQ(r.out, "hello from python\n");
  // A failed start leaves nothing of sentry's: no monitor or guest process,
  // no state directory (podman passes no --root: sentry's default), no
  // sandbox cgroup.
  ProcessResult missing = Run({"--name", "sentry-missing"}, {"/no/such/program"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("/no/such/program"), std::string::npos) << missing.err;
  ProcessResult id = Podman_({"inspect", "--format", "{{.Id}}", "sentry-missing"});
  ASSERT_EQ(id.exit_code, 0) << id.err;
  std::string cid = id.out.substr(0, id.out.find('\n'));
  ASSERT_EQ(cid.size(), 64u) << id.out;
  EXPECT_EQ(Leftovers(cid), "");
  EXPECT_NE(access(("/run/sentry-oci/" + cid).c_str(), F_OK), 0);
  EXPECT_EQ(SentryCgroups(), "");
  EXPECT_EQ(Podman_({"rm", "sentry-missing"}).exit_code, 0);
}

TEST_F(Podman, EnvWorkdirAndUser) {
  ProcessResult r = Run({"--rm", "-e", "FOO=bar", "-w", "/home/sandbox", "-u", "1000:1000"},
                        {"sh", "-c", "echo $FOO; pwd; id -u; id -g"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "bar\n/home/sandbox\n1000\n1000\n");
}

TEST_F(Podman, StdinAndTty) {
  ProcessResult in = Run({"--rm", "-i"}, {"cat"}, "a line in\n");
  EXPECT_EQ(in.exit_code, 0) << in.err;
  EXPECT_EQ(in.out, "a line in\n");
  // All three on the terminal, as under runc: a stderr pipe staircases
  // Python's prompts.
  ProcessResult tty = Run({"--rm", "-t"}, {"sh", "-c",
                                           "for i in 0 1 2; do test -t $i && echo tty$i; done; "
                                           "echo to-stderr >&2"});
  EXPECT_EQ(tty.exit_code, 0) << tty.err;
  EXPECT_NE(tty.out.find("tty0\r\ntty1\r\ntty2\r\nto-stderr\r\n"), std::string::npos) << tty.out;
}

TEST_F(Podman, WritesDoNotReachTheHostAndNetworkNoneHasLoopbackOnly) {
  ProcessResult r = Run({"--rm"}, {"sh", "-c",
                                   "echo x > /etc/podman-new && rm /usr/bin/true && "
                                   "echo > /etc/group && echo ok"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
  EXPECT_NE(access((rootfs_ + "/etc/podman-new").c_str(), F_OK), 0);
  EXPECT_EQ(access((rootfs_ + "/usr/bin/true").c_str(), F_OK), 0);
  EXPECT_NE(ReadFile(rootfs_ + "/etc/group").find("sandbox"), std::string::npos);
  ProcessResult net = Run({"--rm", "--network=none"}, {"python3", "-c", R"(
import errno, socket
print(sorted(n for _, n in socket.if_nameindex()))
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
c = socket.create_connection(s.getsockname()); print("lo up")
try:
    socket.create_connection(("192.0.2.1", 80), timeout=2)
except OSError as e:
    print("out:", errno.errorcode.get(e.errno, e.errno))
)"});
  EXPECT_EQ(net.exit_code, 0) << net.err;
  EXPECT_EQ(net.out, "['lo']\nlo up\nout: ENETUNREACH\n");
}

// podman --network ns:PATH names a network namespace by path in
// config.json, as podman's own networks and CRI pods do: allowed connections
// leave from it (its loopback answers, not the host's); the guest sees lo alone.
TEST_F(Podman, AllowedConnectionsLeaveFromTheNetworkNamespacePodmanGives) {
  EngineNetns ns;
  ASSERT_TRUE(ns.ok());
  std::string port = std::to_string(ns.port());
  ProcessResult r = Run({"--rm", "--network", "ns:" + ns.path(), "--annotation",
                         "dev.sentry.allow-net=127.0.0.1:" + port, "--annotation",
                         "dev.sentry.unsafe-allow-private-address=true"},
                        {"python3", "-c", R"(
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
print(c.recv(16).decode().strip(), sorted(n for _, n in socket.if_nameindex()))
)",
                         port});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "engine ['lo']\n");
  EXPECT_EQ(ns.engine_connections(), 1);
  EXPECT_EQ(ns.host_connections(), 0);
  // Without the allowlist nothing reaches it.
  ProcessResult denied = Run({"--rm", "--network", "ns:" + ns.path()}, {"python3", "-c", R"(
import errno, socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
except OSError as e:
    print(errno.errorcode[e.errno])
)",
                                                                        port});
  EXPECT_EQ(denied.exit_code, 0) << denied.err;
  EXPECT_EQ(denied.out, "ECONNREFUSED\n");
  EXPECT_EQ(ns.engine_connections(), 1);
  EXPECT_EQ(ns.host_connections(), 0);
}

TEST_F(Podman, DetachedContainersStopKillPsAndLogs) {
  ProcessResult d = Run({"-d", "--name", "sentry-d1"}, {"sh", "-c", "echo started; sleep 100"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  ProcessResult ps = Podman_({"ps", "--format", "{{.Names}} {{.Status}}"});
  EXPECT_NE(ps.out.find("sentry-d1 Up"), std::string::npos) << ps.out;
  ProcessResult logs;
  for (int i = 0; i < 50 && logs.out.empty(); ++i) {
    usleep(100 * 1000);
    logs = Podman_({"logs", "sentry-d1"});
  }
  EXPECT_EQ(logs.out, "started\n");
  EXPECT_EQ(Podman_({"stop", "-t", "2", "sentry-d1"}).exit_code, 0);
  ProcessResult code = Podman_({"inspect", "--format", "{{.State.ExitCode}}", "sentry-d1"});
  EXPECT_EQ(code.out, "143\n");  // SIGTERM reached the guest

  ProcessResult k = Run({"-d", "--name", "sentry-k1"}, {"sleep", "100"});
  ASSERT_EQ(k.exit_code, 0) << k.err;
  EXPECT_EQ(Podman_({"kill", "sentry-k1"}).exit_code, 0);
  ProcessResult wait = Podman_({"wait", "sentry-k1"});
  EXPECT_EQ(wait.out, "137\n") << wait.err;
  EXPECT_EQ(Podman_({"rm", "sentry-d1", "sentry-k1"}).exit_code, 0);
  EXPECT_EQ(Leftovers(dir_->path()), "");
}

TEST_F(Podman, ExecRunsInTheContainerWithItsFilesEnvAndExitCode) {
  ProcessResult d =
      Run({"-d", "--name", "sentry-e1"}, {"sh", "-c", "echo first > /tmp/made; sleep 100"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  ProcessResult e;
  for (int i = 0; i < 50; ++i) {
    e = Podman_({"exec", "sentry-e1", "cat", "/tmp/made"});
    if (e.exit_code == 0) break;
    usleep(100 * 1000);
  }
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(e.out, "first\n");
  ProcessResult env = Podman_({"exec", "-e", "FOO=bar", "-w", "/tmp", "-u", "65534:65534",
                               "sentry-e1", "sh", "-c", "echo $FOO; pwd; id -u; exit 9"});
  EXPECT_EQ(env.exit_code, 9) << env.err;
  EXPECT_EQ(env.out, "bar\n/tmp\n65534\n");
  ProcessResult in = Podman_({"exec", "-i", "sentry-e1", "cat"}, "through stdin\n");
  EXPECT_EQ(in.exit_code, 0) << in.err;
  EXPECT_EQ(in.out, "through stdin\n");
  ProcessResult tty = Podman_({"exec", "-t", "sentry-e1", "sh", "-c", "test -t 1 && echo tty"});
  EXPECT_EQ(tty.exit_code, 0) << tty.err;
  EXPECT_NE(tty.out.find("tty"), std::string::npos) << tty.out;
  ProcessResult missing = Podman_({"exec", "sentry-e1", "/no/such/program"});
  EXPECT_EQ(missing.exit_code, 127) << missing.err;
  EXPECT_EQ(Podman_({"rm", "-f", "sentry-e1"}).exit_code, 0);
  EXPECT_EQ(Leftovers(dir_->path()), "");
}

// The same podman runs with --runtime runc: what podman shows is the same.
TEST_F(Podman, TheSameRunsAsUnderRunc) {
  if (FirstExecutable({"/usr/sbin/runc", "/usr/bin/runc"}).empty()) {
    SKIP_WITHOUT_ENGINE("runc is not installed: nothing to compare with");
  }
  struct Case {
    std::vector<std::string> flags, cmd;
  } cases[] = {
      {{"--rm"}, {"python3", "-c", "import sys; print('hello from python'); sys.exit(7)"}},
      {{"--rm", "-e", "FOO=a b=c", "-w", "/tmp", "-u", "1000:1000"},
       {"sh", "-c", "echo \"$FOO\"; pwd; id -u; id -g; exit 5"}},
      {{"--rm", "--network=none"},
       {"python3", "-c", "import socket; print(sorted(n for _, n in socket.if_nameindex()))"}},
  };
  for (const Case& c : cases) {
    runtime_ = "runc";
    ProcessResult runc = Run(c.flags, c.cmd);
    runtime_ = SentryBinary();
    ProcessResult sentry = Run(c.flags, c.cmd);
    EXPECT_EQ(sentry.out, runc.out) << c.cmd.back();
    EXPECT_EQ(sentry.exit_code, runc.exit_code) << c.cmd.back() << sentry.err << runc.err;
    EXPECT_NE(runc.out, "") << runc.err;
  }
}

}  // namespace
}  // namespace sentry::testing
