// containerd's runc v2 shim driving sentry (ctr --runc-binary), through a
// private containerd the suite starts in a scratch directory and stops by its
// pid. Skipped where containerd or ctr is not installed.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/oci/oci_util.h"

namespace sentry::testing {
namespace {

constexpr const char* kContainerd = "/usr/bin/containerd";
constexpr const char* kCtr = "/usr/bin/ctr";

class Containerd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (access(kContainerd, X_OK) != 0 || access(kCtr, X_OK) != 0) return;
    dir_ = new ScratchDir("/tmp");  // unix socket paths are short
    const std::string& d = dir_->path();
    std::ofstream(d + "/config.toml")
        << "version = 2\nroot = \"" << d << "/root\"\nstate = \"" << d << "/state\"\n"
        << "disabled_plugins = [\"io.containerd.grpc.v1.cri\", "
           "\"io.containerd.snapshotter.v1.aufs\", \"io.containerd.snapshotter.v1.btrfs\", "
           "\"io.containerd.snapshotter.v1.zfs\", \"io.containerd.snapshotter.v1.devmapper\", "
           "\"io.containerd.tracing.processor.v1.otlp\", \"io.containerd.internal.v1.tracing\"]\n"
        << "[grpc]\n  address = \"" << d << "/containerd.sock\"\n"
        << "[ttrpc]\n  address = \"" << d << "/containerd.sock.ttrpc\"\n"
        << "[metrics]\n  address = \"\"\n";
    pid_ = fork();
    if (pid_ == 0) {
      freopen((d + "/containerd.log").c_str(), "w", stderr);
      freopen("/dev/null", "w", stdout);
      execl(kContainerd, kContainerd, "--config", (d + "/config.toml").c_str(), nullptr);
      _exit(127);
    }
    for (int i = 0; i < 200; ++i) {
      if (RunProcess({kCtr, "--address", d + "/containerd.sock", "version"}).exit_code == 0) {
        up_ = true;
        break;
      }
      usleep(50 * 1000);
    }
  }
  static void TearDownTestSuite() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      if (WaitExit(pid_, 10) < 0) {
        kill(pid_, SIGKILL);
        WaitExit(pid_, 5);
      }
    }
    delete dir_;
  }
  void SetUp() override {
    if (access(kContainerd, X_OK) != 0 || access(kCtr, X_OK) != 0) {
      GTEST_SKIP() << "containerd or ctr is not installed";
    }
    ASSERT_TRUE(up_) << ReadFile(dir_->path() + "/containerd.log");
    std::string why;
    rootfs_ = TestRootfs(&why);
    ASSERT_FALSE(rootfs_.empty()) << why;
  }
  ProcessResult Ctr(const std::vector<std::string>& args, const std::string& input = "") {
    std::vector<std::string> argv = {kCtr, "--address", dir_->path() + "/containerd.sock", "-n",
                                     "sentry-test"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv, input, 60);
  }
  // ctr run [flags] --rootfs ... ROOTFS ID cmd...
  ProcessResult Run(const std::vector<std::string>& flags, const std::string& id,
                    const std::vector<std::string>& cmd, const std::string& input = "") {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), flags.begin(), flags.end());
    for (const std::string& a :
         {std::string("--rootfs"), std::string("--runtime"), std::string("io.containerd.runc.v2"),
          std::string("--runc-binary"), SentryBinary(), std::string("--runc-root"), RuncRoot(),
          std::string("--fifo-dir"), dir_->path() + "/fifo", rootfs_, id}) {
      args.push_back(a);
    }
    args.insert(args.end(), cmd.begin(), cmd.end());
    return Ctr(args, input);
  }
  std::string RuncRoot() { return dir_->path() + "/runc-root"; }

  static ScratchDir* dir_;
  static pid_t pid_;
  static bool up_;
  std::string rootfs_;
};

ScratchDir* Containerd::dir_ = nullptr;
pid_t Containerd::pid_ = -1;
bool Containerd::up_ = false;

TEST_F(Containerd, RunPrintsReadsStdinAndReturnsTheExitCode) {
  ProcessResult r = Run({"--rm"}, "r1", {"python3", "-c", "print('hello from ctr')"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello from ctr\n");
  // ctr never closes the task's stdin: one line is read.
  ProcessResult in = Run({"--rm"}, "r2", {"sh", "-c", "read l; echo got $l; exit 5"}, "x\n");
  EXPECT_EQ(in.exit_code, 5) << in.err;
  EXPECT_EQ(in.out, "got x\n");
}

// --with-ns network:PATH puts the path in config.json as the CRI plugin does
// for a pod's sandbox: allowed connections leave from that namespace.
TEST_F(Containerd, AllowedConnectionsLeaveFromTheNamespaceGivenByPath) {
  EngineNetns ns;
  ASSERT_TRUE(ns.ok());
  std::string port = std::to_string(ns.port());
  ProcessResult r = Run({"--rm", "--with-ns", "network:" + ns.path(), "--annotation",
                         "dev.sentry.allow-net=127.0.0.1:" + port, "--annotation",
                         "dev.sentry.unsafe-allow-private-address=true"},
                        "n1",
                        {"python3", "-c", R"(
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
print(c.recv(16).decode().strip())
)",
                         port});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "engine\n");
  EXPECT_EQ(ns.engine_connections(), 1);
  EXPECT_EQ(ns.host_connections(), 0);
}

TEST_F(Containerd, PsListsTheGuestAndExecRunsInIt) {
  ProcessResult d = Run({"-d"}, "p1", {"sh", "-c", "sleep 100 & sleep 100"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  usleep(300 * 1000);
  ProcessResult ps = Ctr({"task", "ps", "p1"});
  EXPECT_EQ(ps.exit_code, 0) << ps.err;
  std::vector<std::string> lines = absl::StrSplit(ps.out, '\n', absl::SkipEmpty());
  EXPECT_EQ(lines.size(), 4u) << ps.out;  // a header, sh and its two sleeps
  ProcessResult e = Ctr({"task", "exec", "--exec-id", "e1", "p1", "sh", "-c", "echo hi; exit 6"});
  EXPECT_EQ(e.exit_code, 6) << e.err;
  EXPECT_EQ(e.out, "hi\n");
  // A detached exec that the task's kill ends with the rest.
  ProcessResult bg = Ctr({"task", "exec", "-d", "--exec-id", "e2", "p1", "sleep", "100"});
  EXPECT_EQ(bg.exit_code, 0) << bg.err;
  EXPECT_EQ(Ctr({"task", "kill", "-s", "SIGKILL", "p1"}).exit_code, 0);
  for (int i = 0; i < 100 && Ctr({"task", "ls"}).out.find("RUNNING") != std::string::npos; ++i) {
    usleep(50 * 1000);
  }
  EXPECT_EQ(Ctr({"task", "rm", "p1"}).exit_code, 0);
  EXPECT_EQ(Ctr({"container", "rm", "p1"}).exit_code, 0);
}

// One detached container covers ctr's process flags and the task's end:
// --env and --cwd, only lo without --net-host, writes that never reach the
// rootfs, its output through --log-uri, `task exec --user`, and `task kill`
// (SIGTERM) ending a process that does not trap it with 143.
TEST_F(Containerd, FlagsLogsWritesAndKill) {
  std::string log = dir_->path() + "/f1.log";
  ProcessResult d =
      Run({"-d", "--log-uri", "file://" + log, "--env", "FOO=bar", "--cwd", "/tmp"}, "f1",
          {"sh", "-c",
           "echo $FOO; pwd; python3 -c 'import socket; print([n for _, n in "
           "socket.if_nameindex()])'; echo x > /etc/ctr-new && cat /etc/ctr-new; echo ready; "
           "exec sleep 100"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const std::string want = "bar\n/tmp\n['lo']\nx\nready\n";
  for (int i = 0; i < 500 && ReadFile(log).size() < want.size(); ++i) usleep(20 * 1000);
  EXPECT_EQ(ReadFile(log), want);
  EXPECT_NE(access((rootfs_ + "/etc/ctr-new").c_str(), F_OK), 0);
  ProcessResult u = Ctr({"task", "exec", "--exec-id", "u1", "--user", "65534", "f1", "id", "-u"});
  EXPECT_EQ(u.exit_code, 0) << u.err;
  EXPECT_EQ(u.out, "65534\n");
  EXPECT_EQ(Ctr({"task", "kill", "f1"}).exit_code, 0);
  for (int i = 0; i < 100 && Ctr({"task", "ls"}).out.find("RUNNING") != std::string::npos; ++i) {
    usleep(50 * 1000);
  }
  ProcessResult rm = Ctr({"task", "rm", "f1"});
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_NE(rm.err.find("143"), std::string::npos) << rm.err;  // ctr logs the exit code
  EXPECT_EQ(Ctr({"container", "rm", "f1"}).exit_code, 0);
}

TEST_F(Containerd, TwentyContainersConcurrentlyLeaveNothingBehind) {
  constexpr int kN = 20;
  std::vector<std::thread> threads;
  std::vector<ProcessResult> runs(kN);
  for (int i = 0; i < kN; ++i) {
    threads.emplace_back([&, i] {
      runs[i] = Run({"-d"}, "n" + std::to_string(i), {"sleep", "100"});
    });
  }
  for (auto& t : threads) t.join();
  threads.clear();
  for (int i = 0; i < kN; ++i) ASSERT_EQ(runs[i].exit_code, 0) << i << ": " << runs[i].err;
  ProcessResult ls = Ctr({"task", "ls"});
  std::vector<pid_t> monitors;
  for (absl::string_view line : absl::StrSplit(ls.out, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() == 3 && f[2] == "RUNNING") monitors.push_back(atoi(f[1].c_str()));
  }
  EXPECT_EQ(monitors.size(), static_cast<size_t>(kN)) << ls.out;
  for (int i = 0; i < kN; ++i) {
    threads.emplace_back([&, i] {
      std::string id = "n" + std::to_string(i);
      Ctr({"task", "kill", "-s", "SIGKILL", id});
      for (int k = 0; k < 200; ++k) {
        if (Ctr({"task", "rm", id}).exit_code == 0) break;
        usleep(50 * 1000);
      }
      Ctr({"container", "rm", id});
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(Ctr({"task", "ls", "-q"}).out, "");
  EXPECT_EQ(Ctr({"container", "ls", "-q"}).out, "");
  for (pid_t m : monitors) {
    EXPECT_FALSE(Alive(m)) << m;
    for (const char* c : {"pids", "memory"}) {
      ProcessResult find = RunProcess({"/usr/bin/find", std::string("/sys/fs/cgroup/") + c, "-name",
                                       "sentry-" + std::to_string(m)});
      EXPECT_EQ(find.out, "") << c;
    }
  }
  // No shim, monitor or sandbox process; no state left under the runtime root.
  for (int i = 0; i < 100 && !ProcessesWith(RuncRoot()).empty(); ++i) usleep(50 * 1000);
  EXPECT_TRUE(ProcessesWith(RuncRoot()).empty());
  ProcessResult left = RunProcess({"/usr/bin/find", RuncRoot(), "-mindepth", "2"});
  EXPECT_EQ(left.out, "");
  ProcessResult mounts = RunProcess({"/bin/grep", "-c", dir_->path(), "/proc/self/mountinfo"});
  EXPECT_EQ(mounts.out, "0\n");
}

}  // namespace
}  // namespace sentry::testing
