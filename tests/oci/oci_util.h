// Helpers for the OCI tests: a rootfs built from the host's files, bundles,
// the runtime's own command line driven as an engine drives it, and the
// processes it leaves (or must not leave) behind.
#ifndef SENTRY_TESTS_OCI_OCI_UTIL_H_
#define SENTRY_TESTS_OCI_OCI_UTIL_H_

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/subprocess.h"

namespace sentry::testing {

// SENTRY_REQUIRE_ENGINES=1 (scripts/test.sh sets it after installing podman,
// containerd, runc and crun): a test whose engine is missing fails instead of
// skipping, since ctest counts a skip as a pass.
bool EnginesRequired();

// GTEST_SKIP() << why, or a failure where EnginesRequired(). Returns from
// the calling function either way.
#define SKIP_WITHOUT_ENGINE(why)                                                \
  do {                                                                          \
    if (::sentry::testing::EnginesRequired()) {                                 \
      GTEST_FAIL() << (why) << " (SENTRY_REQUIRE_ENGINES=1: it must be there)"; \
    }                                                                           \
    GTEST_SKIP() << (why);                                                      \
  } while (0)

// The first of paths that is an executable file, or "".
std::string FirstExecutable(const std::vector<std::string>& paths);

// The shared rootfs (python3 and its stdlib, sh, coreutils), built once per
// build tree by make_rootfs.sh; "" (with *why) if it cannot be.
std::string TestRootfs(std::string* why);

// A fresh directory under the build tree's tests/oci (traversable by the
// sandbox's loader, an unprivileged host user), removed at the end.
class ScratchDir final {
 public:
  // parent "": the build tree's tests/oci.
  explicit ScratchDir(const std::string& parent = "");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes dir/config.json: rootfs as root.path, args as process.args, and the
// JSON members in extra_process / extra_top spliced into process / the top.
void WriteBundle(const std::string& dir, const std::string& rootfs,
                 const std::vector<std::string>& args, const std::string& extra_process = "",
                 const std::string& extra_top = "");

// Runs argv with stdin /dev/null and stdout/stderr into files (a monitor may
// keep them open after argv exits); returns argv's exit code.
int SpawnToFiles(const std::vector<std::string>& argv, const std::string& out_path,
                 const std::string& err_path);
// The same with extra_fds as argv's fds 3, 4, ... and no other fd from 3 on
// (as an engine hands over fds with --preserve-fds).
int SpawnToFiles(const std::vector<std::string>& argv, const std::string& out_path,
                 const std::string& err_path, const std::vector<int>& extra_fds);

// Waits for a child (or an orphan this process reaps as a subreaper) to exit;
// its exit code (128+N for signal N), or -1 after timeout_sec.
int WaitExit(pid_t pid, double timeout_sec);

std::string ReadFile(const std::string& path);

// Host pids whose command line holds needle (to find what a runtime left).
std::vector<pid_t> ProcessesWith(const std::string& needle);

// Whether pid is a live (not zombie) process.
bool Alive(pid_t pid);

// The cgroup directories named name directly under this process's own cgroup
// of each v1 hierarchy: where a monitor this process started (its cgroups
// are its starter's) makes its sandbox's, "sentry-PID". Not the whole
// hierarchy: a run under another parent may have left one named for a pid
// that a monitor here reused.
std::vector<std::string> CgroupsNamed(const std::string& name);

// Accepts one connection on the listening unix socket `ls` and receives the
// one fd a runtime sends over it (a console socket's pty master, a pidfd
// socket's pidfd), with the message's bytes in *name if given. -1 when
// nothing comes within timeout_ms.
int ReceiveOneFd(int ls, std::string* name = nullptr, int timeout_ms = 30000);

// A network namespace as an engine makes one (a process of its own that
// unshared it, lo up), named by path as podman and containerd name theirs:
// /proc/PID/ns/net. In it and in the test's own (the host's) namespace a
// listener on the same 127.0.0.1 port answers each connection with its tag
// ("engine", "host") and counts it, so a test can tell where a guest's
// connection went, or that it went nowhere.
class EngineNetns final {
 public:
  EngineNetns();
  ~EngineNetns();
  EngineNetns(const EngineNetns&) = delete;
  EngineNetns& operator=(const EngineNetns&) = delete;
  bool ok() const { return port_ != 0; }
  const std::string& path() const { return path_; }
  int port() const { return port_; }
  int engine_connections() const { return engine_.count; }
  int host_connections() const { return host_.count; }

 private:
  struct Listener {
    int fd = -1;
    std::atomic<int> count{0};
    std::thread thread;
  };
  static void Serve(Listener* l, const char* tag);
  pid_t holder_ = -1;
  std::string path_;
  int port_ = 0;
  Listener engine_, host_;
};

}  // namespace sentry::testing

#endif  // SENTRY_TESTS_OCI_OCI_UTIL_H_
