// sentry pool and `sentry run --pool`: a run in a warm sandbox behaves as a
// cold one does (output, exit codes, limits, stdin, files copied in, signals),
// no sandbox serves twice, a client that goes away ends its run, and only the
// pool's own user is served.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

int ConnectTo(const std::string& path) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) < 0) {
    close(s);
    return -1;
  }
  return s;
}

// Host processes whose command line holds arg.
int HostProcessesWithArg(const std::string& arg) {
  DIR* d = opendir("/proc");
  int found = 0;
  while (dirent* e = readdir(d)) {
    std::string cmdline = ReadHostFile(std::string("/proc/") + e->d_name + "/cmdline");
    if (cmdline.find(arg) != std::string::npos) ++found;
  }
  closedir(d);
  return found;
}

// A `sentry pool` for one test: started in the constructor, stopped (SIGTERM)
// in the destructor.
class Pool final {
 public:
  explicit Pool(int size = 2, const std::vector<std::string>& extra = {})
      : socket_(dir_.path() + "/pool.sock"), log_(dir_.path() + "/log") {
    std::vector<std::string> argv = {SentryBinary(), "pool",   "--socket",
                                     socket_,        "--size", std::to_string(size)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 2);
      execv(args[0], args.data());
      _exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      int s = ConnectTo(socket_);
      if (s >= 0) {
        close(s);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~Pool() { Stop(); }
  int Stop() {
    if (pid_ <= 0) return status_;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return status_;
  }
  const std::string& socket() const { return socket_; }
  std::string log() const { return ReadHostFile(log_); }
  std::vector<std::string> Flags(std::vector<std::string> more = {}) const {
    more.insert(more.begin(), {"--pool", socket_});
    return more;
  }

 private:
  TempDir dir_;
  std::string socket_, log_;
  pid_t pid_ = -1;
  int status_ = -1;
};

TEST(PoolTest, RunsAsAColdRunDoes) {
  Pool pool;
  ProcessResult r = RunSentry(pool.Flags(), {"/usr/bin/python3", "-c",
                                             "import os, sys\n"
                                             "print(48271 * 6933, os.getcwd(), os.getuid())\n"
                                             "print('oops', file=sys.stderr)\n"
                                             "sys.exit(3)\n"});
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_EQ(r.out, "334662843 /home/sandbox 1000\n");
  EXPECT_EQ(r.err, "oops\n");  // no notice: the pool served it

  ProcessResult echo = RunSentry(pool.Flags(), {"/bin/cat"}, "from stdin\n");
  EXPECT_EQ(echo.exit_code, 0) << Describe(echo);
  EXPECT_EQ(echo.out, "from stdin\n");

  ProcessResult json =
      RunSentry(pool.Flags({"--json"}), {"/bin/sh", "-c", "cat; echo out; exit 4"}, "ignored\n");
  EXPECT_EQ(json.exit_code, 4) << Describe(json);
  EXPECT_NE(json.out.find("\"stdout\":\"out\\n\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"exitCode\":4"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"cgroup-memory\""), std::string::npos) << json.out;

  ProcessResult missing = RunSentry(pool.Flags(), {"/no/such/program"});
  EXPECT_EQ(missing.exit_code, 127) << Describe(missing);
}

// A warm sandbox's stdout and stderr are two pipes and it writes no host
// file: one ordered stream and --copy-out start cold, and say so.
TEST(PoolTest, OneOrderedStreamAndCopyOutStartCold) {
  Pool pool;
  TempDir dir;
  std::string log = dir.path() + "/out.log";
  ProcessResult r =
      RunProcess({"/bin/sh", "-c",
                  "'" + SentryBinary() + "' run --pool " + pool.socket() +
                      " -- /bin/sh -c 'printf \"out1\\n\"; printf \"err1\\n\" >&2; printf "
                      "\"out2\\n\"; printf \"err2\\n\" >&2' >" +
                      log + " 2>&1"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::string got = ReadHostFile(log);
  EXPECT_NE(got.find("out1\nerr1\nout2\nerr2\n"), std::string::npos) << got;
  EXPECT_NE(got.find("one ordered stream"), std::string::npos) << got;
  ProcessResult c = RunSentry(pool.Flags({"--copy-out", "f:" + dir.path() + "/res"}),
                              {"/bin/sh", "-c", "echo made > f"});
  EXPECT_EQ(c.exit_code, 0) << Describe(c);
  EXPECT_EQ(ReadHostFile(dir.path() + "/res/f"), "made\n");
  EXPECT_NE(c.err.find("--copy-out needs a cold start"), std::string::npos) << c.err;
}

TEST(PoolTest, FilesAndPathsAreTheClientsOwn) {
  Pool pool;
  TempDir dir;
  dir.Write("script.py", "print(open('data.txt').read().strip(), input())\n");
  dir.Write("data.txt", "copied\n");
  dir.Write("in.txt", "from file\n");
  ProcessResult r = SentryIn(dir.path(),
                             pool.Flags({"--copy", "data.txt:/home/sandbox/data.txt", "--stdin",
                                         "in.txt", "--env", "X=1"}),
                             {"/usr/bin/python3", "script.py"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "copied from file\n");
}

// The script copy's rule (script_copy.h) holds in the pool's worker too: it
// reads from the client's cwd, and an absolute path gets the notice, not the
// file.
TEST(PoolTest, TheScriptRuleHoldsInAWarmSandbox) {
  Pool pool;
  TempDir dir;
  dir.Write("job.py", "print('job ran')\n");
  std::string secret = dir.Write("secret.py", "print('POOL-SECRET')\n", 0600);
  ProcessResult job = SentryIn(dir.path(), pool.Flags(), {"/usr/bin/python3", "job.py"});
  EXPECT_EQ(job.exit_code, 0) << Describe(job);
  EXPECT_EQ(job.out, "job ran\n");
  EXPECT_EQ(job.err.find("a cold start"), std::string::npos) << Describe(job);
  ProcessResult r = SentryIn(dir.path(), pool.Flags(), {"/bin/cat", secret});
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out.find("POOL-SECRET"), std::string::npos) << Describe(r);
  EXPECT_NE(r.err.find("sentry: " + secret + " not copied in: it is an absolute path"),
            std::string::npos)
      << Describe(r);
}

TEST(PoolTest, LimitsAreTheRequests) {
  Pool pool;
  ProcessResult slow = RunSentry(pool.Flags({"--timeout", "0.5", "--json"}), {"/bin/sleep", "30"});
  EXPECT_EQ(slow.exit_code, 124) << Describe(slow);
  EXPECT_NE(slow.out.find("\"timedOut\":true"), std::string::npos) << slow.out;
  ProcessResult big = RunSentry(pool.Flags({"--memory", "64m", "--json"}),
                                {"/usr/bin/python3", "-c", "x = bytearray(256 << 20)"});
  EXPECT_NE(big.out.find("\"limit\":\"memory\""), std::string::npos) << Describe(big);
  ProcessResult nofile =
      RunSentry(pool.Flags({"--nofile", "64"}),
                {"/usr/bin/python3", "-c",
                 "import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE))"});
  EXPECT_EQ(nofile.out, "(64, 64)\n") << Describe(nofile);
}

TEST(PoolTest, NoSandboxServesTwice) {
  Pool pool(1);
  ProcessResult first = RunSentry(pool.Flags(), {"/bin/sh", "-c",
                                                 "echo secret > /tmp/left; "
                                                 "(sleep 1000.25 &) ; echo started"});
  ASSERT_EQ(first.exit_code, 0) << Describe(first);
  ASSERT_EQ(first.out, "started\n");
  for (int i = 0; i < 3; ++i) {
    ProcessResult next =
        RunSentry(pool.Flags(), {"/bin/sh", "-c",
                                 "cat /tmp/left 2>&1; cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | "
                                 "grep -c 'sleep 1000[.]25'"});
    // Nothing the first run wrote or started is there.
    EXPECT_NE(next.out.find("No such file"), std::string::npos) << Describe(next);
    EXPECT_EQ(next.out.find("secret"), std::string::npos) << next.out;
    EXPECT_NE(next.out.find("\n0\n"), std::string::npos) << next.out;
  }
  EXPECT_EQ(HostProcessesWithArg("1000.25"), 0);
}

TEST(PoolTest, ClientGoneEndsTheRun) {
  Pool pool;
  pid_t client = fork();
  if (client == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    execl(SentryBinary().c_str(), "sentry", "run", "--pool", pool.socket().c_str(), "--",
          "/bin/sleep", "1000.5", nullptr);
    _exit(127);
  }
  // The client's command line and the guest's both name 1000.5.
  for (int i = 0; i < 500 && HostProcessesWithArg("1000.5") < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(HostProcessesWithArg("1000.5"), 2) << "the guest never started";
  kill(client, SIGKILL);
  waitpid(client, nullptr, 0);
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    gone = HostProcessesWithArg("1000.5") == 0;
  }
  EXPECT_TRUE(gone) << "the guest outlived its client";
}

TEST(PoolTest, SignalsReachTheGuest) {
  Pool pool;
  TempDir dir;
  std::string out = dir.path() + "/out";
  pid_t client = fork();
  if (client == 0) {
    int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    dup2(fd, 1);
    execl(SentryBinary().c_str(), "sentry", "run", "--pool", pool.socket().c_str(), "--",
          "/usr/bin/python3", "-u", "-c",
          "import signal, time\n"
          "signal.signal(signal.SIGTERM, lambda *a: (print('got TERM'), exit(7)))\n"
          "print('ready')\n"
          "time.sleep(30)\n",
          nullptr);
    _exit(127);
  }
  // "ready\n" whole: python -u writes print's text and its newline apart, and
  // a signal between the two would lose the newline.
  for (int i = 0; i < 500 && ReadHostFile(out).find("ready\n") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(client, SIGTERM);
  int status = 0;
  waitpid(client, &status, 0);
  // As a cold run: the guest had its signal, and sentry says it got one.
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << status;
  EXPECT_EQ(ReadHostFile(out), "ready\ngot TERM\n");
}

TEST(PoolTest, OnlyThePoolsUserIsServed) {
  Pool pool;
  struct stat st;
  ASSERT_EQ(stat(pool.socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Opened to everyone by hand, the socket still serves nobody else: the
  // client (nobody) is told why and starts cold (which a non-root caller may
  // not do here either), and nothing ran in the warm sandbox.
  chmod(pool.socket().c_str(), 0666);
  TempDir dir;
  std::string err = dir.path() + "/err";
  pid_t client = fork();
  if (client == 0) {
    int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(fd, 2);
    if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0) _exit(99);
    execl(SentryBinary().c_str(), "sentry", "run", "--pool", pool.socket().c_str(), "--",
          "/bin/true", nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(client, &status, 0);
  EXPECT_NE(ReadHostFile(err).find("a cold start (this pool serves uid 0 only)"), std::string::npos)
      << ReadHostFile(err);
  // The pool keeps serving its own user.
  ProcessResult ok = RunSentry(pool.Flags(), {"/bin/echo", "still here"});
  EXPECT_EQ(ok.out, "still here\n") << Describe(ok);
}

TEST(PoolTest, AMalformedRequestIsRefused) {
  Pool pool;
  int s = ConnectTo(pool.socket());
  ASSERT_GE(s, 0);
  uint32_t n = 5;  // a length, then garbage, and no fds attached
  ASSERT_EQ(write(s, &n, sizeof(n)), 4);
  ASSERT_EQ(write(s, "xxxxx", 5), 5);
  char verdict = 0;
  EXPECT_EQ(read(s, &verdict, 1), 1);
  EXPECT_EQ(verdict, 'R');
  uint32_t len = 0;
  ASSERT_EQ(read(s, &len, sizeof(len)), 4);
  std::string why(len, '\0');
  ASSERT_EQ(read(s, why.data(), len), static_cast<ssize_t>(len));
  EXPECT_NE(why.find("fds"), std::string::npos) << why;
  close(s);
  ProcessResult ok = RunSentry(pool.Flags(), {"/bin/echo", "served"});
  EXPECT_EQ(ok.out, "served\n") << Describe(ok);
}

TEST(PoolTest, WhatAWarmSandboxCannotServeRunsCold) {
  Pool pool;
  ProcessResult root = RunSentry(pool.Flags({"--root"}), {"/usr/bin/id", "-u"});
  EXPECT_EQ(root.exit_code, 0) << Describe(root);
  EXPECT_EQ(root.out, "0\n");
  EXPECT_NE(root.err.find("sentry: notice: a cold start (--root"), std::string::npos) << root.err;
  TempDir dir;
  ProcessResult none = RunSentry({"--pool", dir.path() + "/no.sock"}, {"/bin/echo", "cold"});
  EXPECT_EQ(none.out, "cold\n") << Describe(none);
  EXPECT_NE(none.err.find("cannot reach the pool"), std::string::npos) << none.err;
}

// --flag=value as `sentry run` takes it; --log-level warn leaves out the
// pool's "listening on" notice.
TEST(PoolTest, FlagsTakeEqualsFormsAndALogLevel) {
  Pool pool(2, {"--size=1", "--refill=1", "--refill-nice=5", "--log-level=warn"});
  ProcessResult r = RunSentry(pool.Flags(), {"/bin/echo", "pooled"});
  EXPECT_EQ(r.out, "pooled\n") << Describe(r);
  EXPECT_EQ(r.err, "") << "served by the pool, no notice";
  EXPECT_EQ(pool.Stop(), 0) << pool.log();
  EXPECT_EQ(pool.log().find("listening on"), std::string::npos) << pool.log();
  Pool loud(1);
  ASSERT_EQ(RunSentry(loud.Flags(), {"/bin/true"}).exit_code, 0) << loud.log();
  EXPECT_EQ(loud.Stop(), 0);
  EXPECT_NE(loud.log().find("sentry: pool: listening on"), std::string::npos) << loud.log();
}

// The entries of the socket's directory (the pool binds a staged name and
// renames it into place once it listens: none may be left).
std::set<std::string> Beside(const std::string& socket) {
  std::set<std::string> out;
  DIR* d = opendir(socket.substr(0, socket.rfind('/')).c_str());
  while (dirent* e = d ? readdir(d) : nullptr) {
    if (e->d_name[0] != '.') out.insert(e->d_name);
  }
  if (d) closedir(d);
  return out;
}

TEST(PoolTest, OnePoolASocketAndACleanStop) {
  std::set<std::string> before = SentryCgroups();
  {
    Pool pool;
    std::set<std::string> beside = Beside(pool.socket());
    ProcessResult second = Sentry({"pool", "--socket", pool.socket()});
    EXPECT_EQ(second.exit_code, 125) << Describe(second);
    EXPECT_NE(second.err.find("already listens"), std::string::npos) << second.err;
    EXPECT_EQ(Beside(pool.socket()), beside) << "a staged socket is left, or one removed";
    EXPECT_EQ(beside.count(pool.socket().substr(pool.socket().rfind('/') + 1)), 1u);
    ASSERT_EQ(RunSentry(pool.Flags(), {"/bin/true"}).exit_code, 0);
    EXPECT_EQ(pool.Stop(), 0) << pool.log();
    struct stat st;
    EXPECT_NE(stat(pool.socket().c_str(), &st), 0) << "the socket is left behind";
  }
  // None of its cgroups is left (an earlier test's run may still be ending).
  for (const std::string& c : SentryCgroups()) EXPECT_TRUE(before.count(c)) << c << " is left";
  EXPECT_EQ(Sentry({"pool"}).exit_code, 125);
  EXPECT_EQ(Sentry({"pool", "--socket", "/tmp/x.sock", "--size", "0"}).exit_code, 125);
}

}  // namespace
}  // namespace sentry::testing
