// Rootless podman with `--runtime sentry`, run by an ordinary user with a
// subordinate range (sentry-rl-subid): podman makes the user namespace and
// calls sentry inside it as uid 0 without host privilege (userns_root.h).
// Its storage, run root and XDG_RUNTIME_DIR are in a scratch directory of
// the user's; the rootfs is the OCI tests' (tests/oci/make_rootfs.sh), copied
// for the user (podman writes into a --rootfs). Needs root to make the user;
// skipped where podman is not installed (a failure under
// SENTRY_REQUIRE_ENGINES=1).
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/rootless/rootless_util.h"

namespace sentry::testing {
namespace {

constexpr const char* kPodman = "/usr/bin/podman";

int RemoveEntry(const char* path, const struct stat*, int type, FTW*) {
  if (type == FTW_DP) {
    rmdir(path);
  } else {
    unlink(path);
  }
  return 0;
}

bool EnginesRequired() {
  const char* v = getenv("SENTRY_REQUIRE_ENGINES");
  return v && std::string(v) == "1";
}

class RootlessPodman : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0 || access(kPodman, X_OK) != 0) return;
    for (const Caller& c : RootlessCallers()) {
      if (c.name == "sentry-rl-subid") caller_ = new Caller(c);
    }
    if (!caller_) return;
    // podman wants a run root of at most 50 characters.
    char templ[] = "/tmp/sentry-rlpod-XXXXXX";
    if (!mkdtemp(templ)) return;
    dir_ = new std::string(templ);
    std::string rootfs = *dir_ + "/rootfs", xdg = *dir_ + "/xdg";
    // Made once per build tree (make_rootfs.sh does nothing if it is there),
    // then copied for the caller.
    ProcessResult made = RunProcess({"/bin/sh", ROOTLESS_MAKE_ROOTFS, ROOTLESS_ROOTFS}, "", 120);
    if (made.exit_code == 0) made = RunProcess({"/bin/cp", "-a", ROOTLESS_ROOTFS, rootfs}, "", 60);
    if (made.exit_code != 0) {
      setup_error_ = new std::string(Describe(made));
      return;
    }
    mkdir(xdg.c_str(), 0700);
    // Without it podman passes no --log to the runtime (see shared/OCI.md).
    std::string conf = *dir_ + "/containers.conf";
    int fd = open(conf.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::string text = "[engine]\nruntime_supports_json = [\"sentry\"]\n";
    (void)!write(fd, text.data(), text.size());
    close(fd);
    RunProcess({"/bin/chown", "-R", absl::StrCat(caller_->uid, ":", caller_->gid), *dir_});
    chmod(dir_->c_str(), 0755);  // the test (root) reads the caller's files
  }
  static void TearDownTestSuite() {
    if (caller_ && dir_) {
      RunAsCaller(*caller_, Argv({"rm", "-af", "-t", "0"}), Env(), "", 60);
      // podman's pause process (it holds the user namespace) is the test's.
      std::string pause = ReadFileOr(*dir_ + "/xdg/libpod/tmp/pause.pid");
      if (!pause.empty() && std::atoi(pause.c_str()) > 1) kill(std::atoi(pause.c_str()), SIGKILL);
      nftw(dir_->c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
    }
    delete caller_;
    delete dir_;
    delete setup_error_;
    caller_ = nullptr;
    dir_ = setup_error_ = nullptr;
  }
  void SetUp() override {
#ifdef SENTRY_SANITIZED
    // podman runs the runtime with an environment of its own (no
    // ASAN_OPTIONS), and a sanitizer's exit report would read to it as the
    // runtime failing: the plain build's pass runs these.
    GTEST_SKIP() << "the sanitized sentry is not podman's runtime here";
#endif
    if (geteuid() != 0) GTEST_SKIP() << "makes its user: run as root";
    if (access(kPodman, X_OK) != 0) {
      if (EnginesRequired()) GTEST_FAIL() << "podman is not installed (SENTRY_REQUIRE_ENGINES=1)";
      GTEST_SKIP() << "podman is not installed";
    }
    ASSERT_NE(caller_, nullptr);
    ASSERT_NE(dir_, nullptr);
    ASSERT_EQ(setup_error_, nullptr) << *setup_error_;
  }

  static std::vector<std::string> Env() {
    return {"XDG_RUNTIME_DIR=" + *dir_ + "/xdg", "CONTAINERS_CONF=" + *dir_ + "/containers.conf"};
  }
  static std::vector<std::string> Argv(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kPodman,
                                     "--root",
                                     *dir_ + "/storage",
                                     "--runroot",
                                     *dir_ + "/rr",
                                     "--storage-driver",
                                     "vfs",
                                     "--cgroup-manager",
                                     "cgroupfs",
                                     "--events-backend",
                                     "file",
                                     "--runtime",
                                     SentryBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  ProcessResult Podman(const std::vector<std::string>& args, const std::string& input = "") {
    return RunAsCaller(*caller_, Argv(args), Env(), input, 90);
  }
  // podman run FLAGS --rootfs ROOTFS CMD..., with no network of podman's
  // (slirp4netns needs /dev/net/tun; sentry's guest has a network namespace
  // of its own either way).
  ProcessResult Run(const std::vector<std::string>& flags, const std::vector<std::string>& cmd,
                    const std::string& input = "") {
    std::vector<std::string> args = {"run", "--network", "none"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--rootfs", *dir_ + "/rootfs"});
    args.insert(args.end(), cmd.begin(), cmd.end());
    return Podman(args, input);
  }
  // The container's state directory (sentry's, under XDG_RUNTIME_DIR).
  std::string StateDirOf(const std::string& name) {
    ProcessResult id = Podman({"inspect", "--format", "{{.Id}}", name});
    return *dir_ + "/xdg/sentry-oci/" + id.out.substr(0, id.out.find('\n'));
  }

  static Caller* caller_;
  static std::string* dir_;
  static std::string* setup_error_;
};

Caller* RootlessPodman::caller_ = nullptr;
std::string* RootlessPodman::dir_ = nullptr;
std::string* RootlessPodman::setup_error_ = nullptr;

TEST_F(RootlessPodman, RunPrintsReadsStdinAndReturnsTheExitCode) {
  ProcessResult r = Run({"--rm"}, {"python3", "-c", "import sys; print('hi', 6 * 7); sys.exit(7)"});
  EXPECT_EQ(r.exit_code, 7) << Describe(r);
  EXPECT_EQ(r.out, "hi 42\n") << Describe(r);
  ProcessResult in = Run({"--rm", "-i"}, {"cat"}, "a line in\n");
  EXPECT_EQ(in.exit_code, 0) << Describe(in);
  EXPECT_EQ(in.out, "a line in\n");
  ProcessResult user = Run({"--rm", "-e", "FOO=bar", "-w", "/tmp", "-u", "1000:1000"},
                           {"sh", "-c", "echo $FOO; pwd; id -u; id -g"});
  EXPECT_EQ(user.exit_code, 0) << Describe(user);
  EXPECT_EQ(user.out, "bar\n/tmp\n1000\n1000\n");
}

TEST_F(RootlessPodman, VolumesWriteAsTheCallerAndItsSecretStaysOut) {
  CallerDir dir(*caller_);
  dir.Write("secret.txt", "TOP-SECRET-PODMAN\n", 0600);
  dir.Write("work/in.txt", "in\n");
  std::string code = absl::StrCat(
      "import os\n"
      "print(open('/work/in.txt').read(), end='')\n"
      "open('/work/out.txt', 'w').write('out')\n"
      "for p in ['",
      dir.path(),
      "/secret.txt', '/work/../secret.txt']:\n"
      "  try:\n"
      "    print('READ', open(p).read())\n"
      "  except OSError as e:\n"
      "    print('no', e.errno)\n");
  ProcessResult r = Run({"--rm", "-v", dir.path() + "/work:/work"}, {"python3", "-c", code});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out.find("TOP-SECRET"), std::string::npos) << Describe(r);
  EXPECT_EQ(r.out.substr(0, 3), "in\n") << Describe(r);
  struct stat st;
  ASSERT_EQ(stat((dir.path() + "/work/out.txt").c_str(), &st), 0) << Describe(r);
  EXPECT_EQ(st.st_uid, caller_->uid);  // podman's root is the caller
}

TEST_F(RootlessPodman, DetachedStopKillExecAndNothingLeft) {
  ProcessResult d =
      Run({"-d", "--name", "rl-d1"}, {"sh", "-c", "echo first > /tmp/made; sleep 100"});
  ASSERT_EQ(d.exit_code, 0) << Describe(d);
  std::string state = StateDirOf("rl-d1");
  struct stat st;
  EXPECT_EQ(stat(state.c_str(), &st), 0) << state;
  ProcessResult e;
  for (int i = 0; i < 50; ++i) {
    e = Podman({"exec", "rl-d1", "sh", "-c", "cat /tmp/made; id -u; exit 9"});
    if (e.exit_code == 9) break;
    usleep(100 * 1000);
  }
  EXPECT_EQ(e.exit_code, 9) << Describe(e);
  EXPECT_EQ(e.out, "first\n0\n");
  ProcessResult in = Podman({"exec", "-i", "rl-d1", "cat"}, "through stdin\n");
  EXPECT_EQ(in.out, "through stdin\n") << Describe(in);
  ProcessResult stop = Podman({"stop", "-t", "2", "rl-d1"});
  EXPECT_EQ(stop.exit_code, 0) << Describe(stop);
  ProcessResult code = Podman({"inspect", "--format", "{{.State.ExitCode}}", "rl-d1"});
  EXPECT_EQ(code.out, "143\n");  // SIGTERM reached the guest

  ProcessResult k = Run({"-d", "--name", "rl-k1"}, {"sleep", "100"});
  ASSERT_EQ(k.exit_code, 0) << Describe(k);
  EXPECT_EQ(Podman({"kill", "rl-k1"}).exit_code, 0);
  ProcessResult wait = Podman({"wait", "rl-k1"});
  EXPECT_EQ(wait.out, "137\n") << Describe(wait);
  EXPECT_EQ(Podman({"rm", "rl-d1", "rl-k1"}).exit_code, 0);
  EXPECT_NE(stat(state.c_str(), &st), 0) << "the state outlived its container: " << state;
  // No sentry process of the caller's is left.
  ProcessResult left = RunProcess({"/bin/sh", "-c",
                                   absl::StrCat("ps -u ", caller_->uid, " -o args= | grep -F ",
                                                SentryBinary(), " | grep -v grep")});
  EXPECT_EQ(left.out, "");
}

TEST_F(RootlessPodman, GuestCannotReachTheCallersProcesses) {
  // A process of the caller's outside the container; the guest signals
  // every pid it can name with SIGKILL, and -1.
  ProcessResult started = RunAsCaller(
      *caller_, {"/bin/sh", "-c", "setsid sleep 120 >/dev/null 2>&1 </dev/null & echo $!"});
  ASSERT_EQ(started.exit_code, 0) << Describe(started);
  pid_t victim = std::atoi(started.out.c_str());
  ASSERT_GT(victim, 1);
  // (The rootfs has no ctypes: ptrace and process_vm_readv are the
  // single-id attacks' in rootless_attack_test.cc, through the same walls.)
  std::string guest = absl::StrCat(
      "import os, signal\n"
      "seen = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
      "print('seen', seen, flush=True)\n"
      "hit = []\n"
      "for pid in [",
      victim,
      "] + list(range(2, 5000)):\n"
      "  if pid != os.getpid():\n"
      "    try: os.kill(pid, signal.SIGKILL); hit.append(pid)\n"
      "    except OSError: pass\n"
      "print('hits', hit, flush=True)\n"
      "try: os.kill(-1, signal.SIGKILL)\n"
      "except OSError: pass\n");
  ProcessResult r = Run({"--rm"}, {"python3", "-c", guest});
  // The guest sees its own pid namespace alone (itself, pid 1 hidden).
  EXPECT_NE(r.out.find("seen [2]\n"), std::string::npos) << Describe(r);
  EXPECT_NE(r.out.find("hits []"), std::string::npos) << Describe(r);
  EXPECT_EQ(kill(victim, 0), 0) << "the caller's process was killed\n" << Describe(r);
  kill(victim, SIGKILL);
}

}  // namespace
}  // namespace sentry::testing
