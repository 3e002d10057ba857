// Nothing survives a run, and the guest is who it should be: an unprivileged
// user of its own namespaces, with no capability and no way to signal the host.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"

namespace sentry::security {
namespace {

std::set<std::string> SentryNamesIn(const std::string& dir) {
  std::set<std::string> out;
  for (const std::string& n : ListDir(dir)) {
    std::string lower = n;
    for (char& c : lower) c = static_cast<char>(tolower(c));
    // (tests/agent's token files are a test helper's, made by other suites
    // that may run beside this one: not the sentry's.)
    if (lower.find("sentry") != std::string::npos && lower.rfind("sentry-token-", 0) != 0) {
      out.insert(n);
    }
  }
  return out;
}

// The value of a "Key:\tvalue" line of /proc/PID/status.
std::string StatusField(pid_t pid, const std::string& key) {
  auto status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  if (!status) return "";
  std::istringstream in(*status);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      std::string v = line.substr(key.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "";
}

// Starts `sentry run flags -- cmd` in the background, output discarded.
pid_t SpawnSentry(const std::vector<std::string>& flags, const std::vector<std::string>& cmd) {
  std::vector<std::string> args = {sentry::testing::SentryBinary(), "run"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("--");
  args.insert(args.end(), cmd.begin(), cmd.end());
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

TEST(Lifecycle, NothingOfOneRunIsSeenByTheNext) {
  std::string token = RandomToken(12);
  ProcessResult first = RunPy("token = " + PyQuote(token) + R"PY(
import ctypes
for p in ["/tmp/x", "/home/sandbox/y", "/var/tmp/z", "/dev/shm/w"]:
    t("write " + p, lambda: open(p, "w").write(token))
os.mkdir("/tmp/dir")
libc = ctypes.CDLL(None, use_errno=True)
t("shmget", lambda: libc.shmget(0x5e57, 4096, 0o1666))
t("msgget", lambda: libc.msgget(0x5e57, 0o1666))
)PY");
  ASSERT_EQ(first.exit_code, 0) << Describe(first);
  Results r1 = ParseResults(first.out);
  for (const char* p : {"/tmp/x", "/home/sandbox/y", "/var/tmp/z", "/dev/shm/w"}) {
    EXPECT_EQ(Code(r1, std::string("write ") + p), "OK") << p;
  }
  ProcessResult second = RunPy(R"PY(
import ctypes
for p in ["/tmp/x", "/home/sandbox/y", "/var/tmp/z", "/dev/shm/w", "/tmp/dir"]:
    t("stat " + p, lambda: os.stat(p).st_size)
t("tmp", lambda: sorted(os.listdir("/tmp")))
t("home", lambda: sorted(os.listdir("/home/sandbox")))
libc = ctypes.CDLL(None, use_errno=True)
t("shmget", lambda: libc.shmget(0x5e57, 0, 0))
t("msgget", lambda: libc.msgget(0x5e57, 0))
)PY");
  ASSERT_EQ(second.exit_code, 0) << Describe(second);
  Results r2 = ParseResults(second.out);
  for (const char* p : {"/tmp/x", "/home/sandbox/y", "/var/tmp/z", "/dev/shm/w", "/tmp/dir"}) {
    EXPECT_EQ(Code(r2, std::string("stat ") + p), "ENOENT") << p;
  }
  EXPECT_EQ(Value(r2, "tmp"), "[]");
  EXPECT_EQ(Value(r2, "home"), "[]");
  EXPECT_EQ(Value(r2, "shmget"), "-1") << "System V shm survived the run";
  EXPECT_EQ(Value(r2, "msgget"), "-1") << "System V queue survived the run";
  EXPECT_EQ(second.out.find(token), std::string::npos);
}

TEST(Lifecycle, NoMountFileOrProcessIsLeftOnTheHost) {
  const std::string marker = "98765" + std::to_string(getpid() % 1000);
  auto mounts_before = ReadFile("/proc/self/mountinfo");
  std::set<std::string> tmp_before = SentryNamesIn("/tmp");
  std::set<std::string> shm_before = SentryNamesIn("/dev/shm");
  // Background children, a double-forked daemon in its own session, then exit.
  ProcessResult r = RunPy("marker = " + PyQuote(marker) + R"PY(
import subprocess
subprocess.Popen(["/bin/sh", "-c", f"sleep {marker}.25 & sleep {marker}.5 & echo started"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", marker + ".75"])
    os._exit(0)
import time
time.sleep(0.3)
t("children", lambda: "started")
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  // The guest's sleeps, by their exact command lines (the sentry's own command
  // line holds the script, not these).
  auto guests = [&] {
    std::vector<pid_t> all;
    for (const char* suffix : {".25", ".5", ".75"}) {
      for (pid_t p : ProcessesWithCmdline("sleep " + marker + suffix, true)) all.push_back(p);
    }
    return all;
  };
  std::vector<pid_t> left;
  for (int i = 0; i < 60; ++i) {
    left = guests();
    if (left.empty()) break;
    usleep(50000);
  }
  EXPECT_TRUE(left.empty()) << left.size() << " guest processes outlived the run, e.g. pid "
                            << (left.empty() ? 0 : left[0]);
  for (pid_t p : left) kill(p, SIGKILL);
  EXPECT_EQ(ReadFile("/proc/self/mountinfo"), mounts_before) << "host mounts changed";
  std::set<std::string> tmp_after = SentryNamesIn("/tmp");
  for (const std::string& n : tmp_after) {
    EXPECT_TRUE(tmp_before.count(n)) << "left in host /tmp: " << n;
  }
  for (const std::string& n : SentryNamesIn("/dev/shm")) {
    EXPECT_TRUE(shm_before.count(n)) << "left in host /dev/shm: " << n;
  }
}

TEST(Lifecycle, GuestIdentityIsUnprivileged) {
  pid_t host_pid = getpid();
  for (bool root : {false, true}) {
    SCOPED_TRACE(root ? "--root" : "uid 1000");
    std::vector<std::string> flags;
    if (root) flags.push_back("--root");
    ProcessResult r = RunProbe({"identity", std::to_string(host_pid)}, flags);
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    Results res = ParseResults(r.out);
    std::string id = root ? "0" : "1000";
    EXPECT_EQ(res["uid"], id);
    EXPECT_EQ(res["euid"], id);
    EXPECT_EQ(res["gid"], id);
    EXPECT_EQ(res["cap_eff"], "0");
    EXPECT_EQ(res["cap_prm"], "0");
    EXPECT_EQ(res["cap_inh"], "0");
    EXPECT_EQ(res.count("capbset_has"), 0u) << "bounding set not empty: " << res["capbset_has"];
    EXPECT_EQ(res["no_new_privs"], "1");
    EXPECT_EQ(res["hostname"], "sandbox");
    if (SeccompOnly()) {
      // No pid namespace: the sentry checks every pid a call names and
      // answers ESRCH for the host's, as a pid namespace would (sys_pid.cc).
      for (const char* n :
           {"kill_hostpid_0", "kill_hostpid_cont", "setpriority_hostpid", "prlimit_hostpid"}) {
        EXPECT_EQ(Code(res, n), "ESRCH") << n;
      }
    } else if (host_pid > 64) {  // a sandbox has a handful of pids; ours cannot be one
      for (const char* n :
           {"kill_hostpid_0", "kill_hostpid_cont", "pidfd_open_hostpid", "setpriority_hostpid",
            "prlimit_hostpid", "sched_getaffinity_hostpid"}) {
        EXPECT_EQ(Code(res, n), "ESRCH") << n;
      }
    }
    EXPECT_EQ(Code(res, "setuid_0"), root ? "OK" : "EPERM");
    EXPECT_EQ(Code(res, "setgroups_0"), "EPERM");
  }
}

// Seen from the host: the guest's processes run as an unmapped-to-anything,
// unprivileged host uid, with no capability, no_new_privs and a seccomp filter.
TEST(Lifecycle, GuestProcessesAreUnprivilegedOnTheHost) {
  const std::string marker = "98764" + std::to_string(getpid() % 1000);
  for (bool root : {false, true}) {
    SCOPED_TRACE(root ? "--root" : "uid 1000");
    std::vector<std::string> flags = {"--timeout", "20"};
    if (root) flags.push_back("--root");
    pid_t sentry = SpawnSentry(flags, {"/bin/sleep", marker + ".5"});
    ASSERT_GT(sentry, 0);
    std::vector<pid_t> guests;
    for (int i = 0; i < 100 && guests.empty(); ++i) {
      usleep(20000);
      guests = ProcessesWithCmdline("/bin/sleep " + marker + ".5", true);
    }
    ASSERT_EQ(guests.size(), 1u) << "guest not found on the host";
    pid_t g = guests[0];
    std::string uid = StatusField(g, "Uid");
    // Root's sandboxes each hold a block of 64 host ids from 2016777216
    // (sentry/run/spawn.h): its first for the namespace's root, +1 for the user.
    long host_uid = std::atol(uid.substr(0, uid.find('\t')).c_str());
    EXPECT_GE(host_uid, 2016777216L) << uid;
    EXPECT_EQ((host_uid - 2016777216L) % 64, root ? 0 : 1) << uid;
    EXPECT_EQ(StatusField(g, "CapEff"), "0000000000000000");
    EXPECT_EQ(StatusField(g, "CapPrm"), "0000000000000000");
    EXPECT_EQ(StatusField(g, "CapBnd"), "0000000000000000");
    EXPECT_EQ(StatusField(g, "NoNewPrivs"), "1");
    EXPECT_EQ(StatusField(g, "Seccomp"), "2");
    kill(sentry, SIGTERM);
    int status;
    waitpid(sentry, &status, 0);
    std::string guest_cmdline = "/bin/sleep " + marker + ".5";
    for (int i = 0; i < 60 && !ProcessesWithCmdline(guest_cmdline, true).empty(); ++i) {
      usleep(50000);
    }
    EXPECT_TRUE(ProcessesWithCmdline(guest_cmdline, true).empty())
        << "the guest outlived a SIGTERM'd sentry";
  }
}

// The old root (the host's whole tree, where pivot_root leaves it) is
// detached and the view made read-only by a helper beside the loader
// (loader/mount_view.cc, StartDetach); the guest waits for both before its
// execve. Here the detach is made late on purpose: a guest that did not
// wait would run with /.old still mounted, and its root writable.
TEST(Lifecycle, GuestRunsOnlyOnceTheOldRootIsDetached) {
  if (SeccompOnly()) GTEST_SKIP() << "no mount namespace without namespaces";
  const std::string marker = "98763" + std::to_string(getpid() % 1000);
  setenv("SENTRY_TEST_DETACH_DELAY_MS", "400", 1);
  pid_t sentry = SpawnSentry({"--timeout", "20"}, {"/bin/sleep", marker + ".5"});
  unsetenv("SENTRY_TEST_DETACH_DELAY_MS");
  ASSERT_GT(sentry, 0);
  std::vector<pid_t> guests;
  for (int i = 0; i < 200 && guests.empty(); ++i) {
    usleep(5000);
    guests = ProcessesWithCmdline("/bin/sleep " + marker + ".5", true);
  }
  ASSERT_EQ(guests.size(), 1u) << "guest not found on the host";
  auto info = ReadFile("/proc/" + std::to_string(guests[0]) + "/mountinfo");
  kill(sentry, SIGTERM);
  int status;
  waitpid(sentry, &status, 0);
  ASSERT_TRUE(info.has_value());
  std::istringstream in(*info);
  std::string line;
  int roots = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, devs, root, point, options;
    f >> id >> parent >> devs >> root >> point >> options;
    EXPECT_NE(point.rfind("/.old", 0), 0u) << "the old root is mounted: " << line;
    if (point == "/") {
      ++roots;
      EXPECT_EQ(options.rfind("ro", 0), 0u) << "the view's root is writable: " << line;
    }
  }
  EXPECT_EQ(roots, 1) << *info;
}

}  // namespace
}  // namespace sentry::security
