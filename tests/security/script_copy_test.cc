// Attacks on the script copy (sentry/run/script_copy.h). Callers pass argv a
// model wrote, and the sentry reads host files as root: each attack names a
// host secret as the "script" some other way than a plain relative path the
// caller could read, and checks that no byte of it reaches the run's output,
// and that sentry said in one line what it did not copy.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"

namespace sentry::security {
namespace {

using sentry::testing::RunProcess;
using sentry::testing::SentryRunArgv;

constexpr const char* kNobody = "65534";

class ScriptCopyAttack : public ::testing::Test {
 protected:
  void SetUp() override {
    chmod(dir_.path().c_str(), 0755);
    work_ = dir_.path() + "/work";
    ASSERT_EQ(mkdir(work_.c_str(), 0755), 0);
    // A script whose text is the secret: running it, cat-ing it or a
    // SyntaxError quoting it would all print the secret.
    secret_script_ = Put("secret.py", "print('" + secret_ + "')\n", 0600);
  }

  // Writes dir/name (relative to the test's host directory), returns its path.
  std::string Put(const std::string& name, const std::string& text, mode_t mode = 0644) {
    std::string path = dir_.path() + "/" + name;
    WriteFileOrDie(path, text, mode);
    chmod(path.c_str(), mode);
    return path;
  }

  // `sentry run flags -- cmd` started in cwd (work_ unless told), with the
  // real uid and gid 65534 and no groups if as_nobody (its effective uid
  // stays root, as for a set-uid or capability-granted sentry).
  ProcessResult Run(const std::vector<std::string>& cmd, bool as_nobody = false,
                    const std::string& cwd = "", const std::vector<std::string>& flags = {}) {
    std::vector<std::string> argv;
    if (as_nobody) {
      argv = {"/usr/bin/setpriv", std::string("--ruid=") + kNobody,
              std::string("--rgid=") + kNobody, "--clear-groups", "--"};
    }
    argv.insert(argv.end(), {"/usr/bin/env", "-C", cwd.empty() ? work_ : cwd});
    for (const std::string& a : SentryRunArgv(flags, cmd)) argv.push_back(a);
    return RunProcess(argv, "", 60);
  }

  // The run printed nothing of the secret, and sentry's one line about arg
  // gives `why`.
  void ExpectRefused(const ProcessResult& r, const std::string& arg, const std::string& why) {
    EXPECT_EQ(r.out.find(secret_), std::string::npos) << Describe(r);
    EXPECT_EQ(r.err.find(secret_), std::string::npos) << Describe(r);
    std::string line = NoticeAbout(r, arg);
    EXPECT_NE(line.find(why), std::string::npos) << "about " << arg << ": " << Describe(r);
    EXPECT_NE(line.find("--copy HOST:GUEST"), std::string::npos) << line;
  }

  static std::string NoticeAbout(const ProcessResult& r, const std::string& arg) {
    std::istringstream lines(r.err);
    std::string line, prefix = "sentry: " + arg + " not copied in: ";
    while (std::getline(lines, line)) {
      if (line.rfind(prefix, 0) == 0) return line;
    }
    return "";
  }

  TempDir dir_{"/tmp/sec-script-"};
  std::string work_;
  std::string secret_ = "SCRIPT-SECRET-" + RandomToken();
  std::string secret_script_;
};

// The red team's reproduction: any program, any absolute path.
TEST_F(ScriptCopyAttack, AnAbsoluteHostPathIsNeverCopied) {
  ProcessResult cat = Run({"/bin/cat", secret_script_});
  ExpectRefused(cat, secret_script_, "it is an absolute path");
  EXPECT_NE(cat.exit_code, 0) << Describe(cat);
  ProcessResult py = Run({"/usr/bin/python3", secret_script_});
  ExpectRefused(py, secret_script_, "it is an absolute path");
  EXPECT_NE(py.exit_code, 0) << Describe(py);
  // The host's own: nothing of it, whatever its contents.
  ProcessResult shadow = Run({"/bin/cat", "/etc/shadow"});
  EXPECT_NE(shadow.exit_code, 0) << Describe(shadow);
  EXPECT_EQ(shadow.out, "") << Describe(shadow);
  EXPECT_EQ(shadow.err.find("root:"), std::string::npos) << Describe(shadow);
}

TEST_F(ScriptCopyAttack, DotDotLeadsNowhere) {
  ASSERT_EQ(mkdir((work_ + "/sub").c_str(), 0755), 0);
  for (const std::string arg : {"../secret.py", "./../secret.py", "sub/../../secret.py"}) {
    ProcessResult r = Run({"/usr/bin/python3", arg});
    ExpectRefused(r, arg, "it leads out of the current directory");
  }
}

TEST_F(ScriptCopyAttack, SymlinksAreNeverFollowed) {
  ASSERT_EQ(symlink(secret_script_.c_str(), (work_ + "/abs.py").c_str()), 0);
  ASSERT_EQ(symlink("../secret.py", (work_ + "/rel.py").c_str()), 0);
  ASSERT_EQ(symlink(dir_.path().c_str(), (work_ + "/up").c_str()), 0);
  for (const std::string arg : {"abs.py", "rel.py", "up/secret.py", "./up/secret.py"}) {
    ProcessResult r = Run({"/usr/bin/python3", arg});
    ExpectRefused(r, arg, "it is a symbolic link or lies under one");
  }
  // The kernel's magic links: a caller whose cwd is / names the secret
  // through /proc.
  std::string via_proc = "proc/self/root" + secret_script_;
  ProcessResult r = Run({"/usr/bin/python3", via_proc}, false, "/");
  ExpectRefused(r, via_proc, "it is a symbolic link or lies under one");
}

// Root's reading power is the sentry's, not the caller's: a caller whose real
// uid could not read the file gets nothing of it, however it is named.
TEST_F(ScriptCopyAttack, NothingTheCallersRealUidCannotRead) {
  WriteFileOrDie(work_ + "/mine.py", "print('" + secret_ + "')\n", 0600);
  ASSERT_EQ(mkdir((work_ + "/private").c_str(), 0700), 0);
  WriteFileOrDie(work_ + "/private/open.py", "print('" + secret_ + "')\n", 0644);
  // A hard link is no symlink: only the permission check stops it.
  ASSERT_EQ(link(secret_script_.c_str(), (work_ + "/hard.py").c_str()), 0);
  for (const std::string arg : {"mine.py", "private/open.py", "hard.py"}) {
    ProcessResult r = Run({"/usr/bin/python3", arg}, /*as_nobody=*/true);
    ExpectRefused(r, arg, std::string("uid ") + kNobody + " may not read it");
  }
  // The control: what uid 65534 may read is copied, in the same run set-up.
  std::string token = RandomToken();
  WriteFileOrDie(work_ + "/ok.py", "print('ok " + token + "')\n", 0644);
  ProcessResult ok = Run({"/usr/bin/python3", "ok.py"}, /*as_nobody=*/true);
  EXPECT_EQ(ok.exit_code, 0) << Describe(ok);
  EXPECT_EQ(ok.out, "ok " + token + "\n") << Describe(ok);
}

// Only regular files, opened through the fd that was checked; a fifo would
// block the sentry, a device could be anything, a huge file is a memory bomb.
TEST_F(ScriptCopyAttack, FifosDevicesAndHugeFilesAreNotRead) {
  ASSERT_EQ(mkfifo((work_ + "/fifo.py").c_str(), 0644), 0);
  ASSERT_EQ(mknod((work_ + "/zero.sh").c_str(), S_IFCHR | 0644, makedev(1, 5)), 0);
  WriteFileOrDie(work_ + "/huge.py", std::string((4 << 20) + 1, '#'), 0644);
  struct Case {
    const char* arg;
    const char* why;
  };
  for (const Case& c : {Case{"fifo.py", "it is a fifo, not a regular file"},
                        Case{"zero.sh", "it is a character device, not a regular file"},
                        Case{"huge.py", "it is larger than 4 MiB"}}) {
    auto start = std::chrono::steady_clock::now();
    ProcessResult r = Run({"/usr/bin/python3", c.arg});
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ExpectRefused(r, c.arg, c.why);
    EXPECT_LT(secs, 20) << c.arg << " must not hang the sentry";
    EXPECT_FALSE(r.timed_out) << Describe(r);
  }
}

// The name is swapped between a benign script and a symlink to the secret
// while runs start: the file checked is the file read, so no run ever gets
// the secret.
TEST_F(ScriptCopyAttack, SwappingTheScriptForASymlinkNeverWins) {
  std::string benign = work_ + "/benign.tmp", evil = work_ + "/evil.tmp";
  std::string target = work_ + "/x.py";
  std::atomic<bool> stop{false};
  std::thread flipper([&] {
    for (unsigned i = 0; !stop; ++i) {
      if (i % 2) {
        WriteFileOrDie(benign, "print('benign')\n", 0644);
        rename(benign.c_str(), target.c_str());
      } else {
        unlink(evil.c_str());
        if (symlink(secret_script_.c_str(), evil.c_str()) == 0)
          rename(evil.c_str(), target.c_str());
      }
    }
  });
  int benign_runs = 0;
  for (int i = 0; i < 30; ++i) {
    ProcessResult r = Run({"/usr/bin/python3", "x.py"});
    EXPECT_EQ(r.out.find(secret_), std::string::npos) << Describe(r);
    EXPECT_EQ(r.err.find(secret_), std::string::npos) << Describe(r);
    if (r.out == "benign\n") ++benign_runs;
  }
  stop = true;
  flipper.join();
  RecordProperty("benign_runs", benign_runs);
}

}  // namespace
}  // namespace sentry::security
