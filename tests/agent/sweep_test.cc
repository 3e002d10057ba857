// A crashed server's warm-pool directory ($TMPDIR/sentry-warm-PID-*) is
// swept when the next server starts; a live server's never is. The servers
// here get a TMPDIR of the test's own: a server another test starts beside
// this one sweeps /tmp, and would take the crashed directory first.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/agent/agent_util.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

// The warm directories of the server process pid under parent.
std::vector<std::string> WarmDirsOf(const std::string& parent, pid_t pid) {
  std::vector<std::string> dirs;
  std::string prefix = "sentry-warm-" + std::to_string(pid) + "-";
  DIR* d = opendir(parent.c_str());
  while (dirent* e = readdir(d)) {
    if (std::string(e->d_name).rfind(prefix, 0) == 0)
      dirs.push_back(parent + "/" + std::string(e->d_name));
  }
  closedir(d);
  return dirs;
}

// Sets TMPDIR to a new directory for the test's life (the servers it starts
// inherit it), then restores it and removes the directory.
class PrivateTmpdir final {
 public:
  PrivateTmpdir() {
    if (const char* old = getenv("TMPDIR")) old_ = old;
    char tmpl[] = "/tmp/sweep-test-XXXXXX";
    if (mkdtemp(tmpl)) path_ = tmpl;
    setenv("TMPDIR", path_.c_str(), 1);
  }
  ~PrivateTmpdir() {
    if (old_)
      setenv("TMPDIR", old_->c_str(), 1);
    else
      unsetenv("TMPDIR");
    if (!path_.empty()) rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::optional<std::string> old_;
  std::string path_;
};

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// A pid no process has: a child of ours, reaped.
pid_t DeadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

TEST(Sweep, CrashedServersWarmDirIsRemovedAtTheNextStartLiveOnesKept) {
  PrivateTmpdir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string& parent = tmp.path();

  // A live server, which must keep its directory and keep working.
  ServeProcess live;
  ASSERT_TRUE(live.ok()) << live.Stderr();
  ASSERT_EQ(WarmDirsOf(parent, live.pid()).size(), 1u) << "no warm pool: " << live.Stderr();
  std::string live_dir = WarmDirsOf(parent, live.pid())[0];

  // A server that crashes with warm sandboxes.
  McpProcess crashed;
  ASSERT_TRUE(crashed.Call(1, "ping", json::object()).contains("result"));
  ASSERT_EQ(WarmDirsOf(parent, crashed.pid()).size(), 1u);
  std::string crashed_dir = WarmDirsOf(parent, crashed.pid())[0];
  kill(crashed.pid(), SIGKILL);
  usleep(300 * 1000);
  ASSERT_TRUE(Exists(crashed_dir)) << "nothing was left to sweep";

  // Planted: a dead server's directory with a lock nobody holds, one
  // mid-start (no lock yet) of a dead pid, and one whose lock is held (a
  // live server's, by this test).
  std::string dead_locked = parent + "/sentry-warm-" + std::to_string(DeadPid()) + "-sweep1";
  std::string dead_unlocked = parent + "/sentry-warm-" + std::to_string(DeadPid()) + "-sweep2";
  std::string held = parent + "/sentry-warm-" + std::to_string(DeadPid()) + "-sweep3";
  for (const std::string& d : {dead_locked, dead_unlocked, held})
    ASSERT_EQ(mkdir(d.c_str(), 0700), 0);
  close(open((dead_locked + "/lock").c_str(), O_CREAT | O_WRONLY, 0600));
  close(open((dead_locked + "/ready").c_str(), O_CREAT | O_WRONLY, 0600));
  int held_fd = open((held + "/lock").c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_EQ(flock(held_fd, LOCK_EX), 0);

  McpProcess next;
  ASSERT_TRUE(next.Call(1, "ping", json::object()).contains("result"));
  EXPECT_FALSE(Exists(crashed_dir));
  EXPECT_FALSE(Exists(dead_locked));
  EXPECT_FALSE(Exists(dead_unlocked));
  EXPECT_TRUE(Exists(held)) << "a directory whose lock is held was swept";
  EXPECT_TRUE(Exists(live_dir)) << "a live server's directory was swept";
  EXPECT_TRUE(Exists(live_dir + "/pool.sock"));
  HttpReply r = live.Post({{"language", "python"}, {"code", "print(6 * 7)"}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["stdout"], "42\n");
  pid_t next_pid = next.pid(), live_pid = live.pid();
  EXPECT_EQ(next.Finish(), 0);
  EXPECT_EQ(live.Stop(), 0);

  close(held_fd);
  unlink((held + "/lock").c_str());
  rmdir(held.c_str());
  // A server that stopped removed its own directory.
  EXPECT_TRUE(WarmDirsOf(parent, live_pid).empty());
  EXPECT_TRUE(WarmDirsOf(parent, next_pid).empty());
}

}  // namespace
}  // namespace sentry::testing
