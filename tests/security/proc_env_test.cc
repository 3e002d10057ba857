// /proc and the environment: the guest's /proc is the sandbox's own, its
// magic links lead back into the sandbox, and nothing of the caller's
// environment or the host's processes shows through.
#include <stdlib.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"

namespace sentry::security {
namespace {

// Sets a variable in the test's (and so the sentry's) environment for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const std::string& name, const std::string& value) : name_(name) {
    setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_.c_str()); }

 private:
  std::string name_;
};

// Reads every file of the guest's /proc (depth-limited, never blocking, never
// following links) and prints it all.
constexpr const char* kProcWalk = R"PY(
def walk(top, depth):
    try:
        names = sorted(os.listdir(top))
    except OSError as e:
        print("LIST", top, errno.errorcode.get(e.errno))
        return
    for n in names:
        p = top + "/" + n
        if n in ("fd", "fdinfo", "mem", "pagemap", "kcore", "kmsg", "clear_refs"):
            continue
        if os.path.islink(p):
            try:
                print("LINK", p, os.readlink(p))
            except OSError as e:
                print("LINK", p, errno.errorcode.get(e.errno))
            continue
        if os.path.isdir(p):
            if depth < 5:
                walk(p, depth + 1)
            continue
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
            try:
                data = os.read(fd, 1 << 16)
            finally:
                os.close(fd)
            print("FILE", p, repr(data))
        except OSError as e:
            print("FILE", p, errno.errorcode.get(e.errno))
walk("/proc", 0)
print("ENVIRON", dict(os.environ))
)PY";

TEST(ProcEscape, ProcMagicLinksLeadBackIntoTheSandbox) {
  Canary canary("/tmp");
  pid_t host_pid = getpid();
  std::vector<std::string> paths = {
      "/proc/1/root",
      "/proc/self/root",
      "/proc/self/root/..",
      "/proc/self/root/../../..",
      "/proc/thread-self/root/..",
      "/proc/2/root/..",
      "/proc/1/cwd/../../..",
      "/proc/self/cwd/../../../..",
      "/proc/" + std::to_string(host_pid),
      "/proc/" + std::to_string(host_pid) + "/root",
      "/proc/" + std::to_string(host_pid) + "/environ",
      "/proc/" + std::to_string(host_pid) + "/cwd",
      "/proc/" + std::to_string(getppid()) + "/root",
      "/proc/1/root/work",
      "/proc/self/root/work",
      "/proc/self/root/.." + HostOnlyCwd(),
      "/proc/1/root" + canary.file(),
      "/proc/self/root" + canary.file(),
      "/proc/self/root/../.." + canary.file(),
      "/proc/self/cwd/../../.." + canary.dir(),
  };
  std::string list = "[";
  for (const std::string& p : paths) list += PyQuote(p) + ", ";
  list += "]";
  ProcessResult r = RunPy("paths = " + list + R"PY(
for i, p in enumerate(paths):
    t(f"list_{i}", lambda: sorted(os.listdir(p)))
    t(f"read_{i}", lambda: open(p, "rb").read())
    t(f"readlink_{i}", lambda: os.readlink(p))
t("slash", lambda: sorted(os.listdir("/")))
t("pid", lambda: os.getpid())
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  std::string slash = Value(res, "slash");
  ASSERT_FALSE(slash.empty());
  bool host_pid_is_sandbox_pid = host_pid < 64;  // a sandbox has a handful of pids
  for (size_t i = 0; i < paths.size(); ++i) {
    std::string idx = std::to_string(i);
    const std::string& p = paths[i];
    SCOPED_TRACE(p);
    bool names_host_pid = p.find("/proc/" + std::to_string(host_pid)) == 0 ||
                          p.find("/proc/" + std::to_string(getppid())) == 0;
    if (names_host_pid && !host_pid_is_sandbox_pid) {
      for (const char* op : {"list_", "read_", "readlink_"}) {
        EXPECT_EQ(Code(res, op + idx), "ENOENT") << "host pids are not in the sandbox's /proc";
      }
      continue;
    }
    bool names_host_path =
        p.find("/work") != std::string::npos || p.find(canary.dir()) != std::string::npos;
    if (names_host_path) {
      for (const char* op : {"list_", "read_", "readlink_"}) {
        std::string c = Code(res, op + idx);
        EXPECT_TRUE(c == "ENOENT" || c == "EACCES") << op << c;
      }
      continue;
    }
    // A root link, however climbed, is the sandbox's / (or absent while /proc
    // does not have it).
    if (Code(res, "list_" + idx) == "OK") {
      EXPECT_EQ(Value(res, "list_" + idx), slash);
    } else {
      std::string c = Code(res, "list_" + idx);
      EXPECT_TRUE(c == "ENOENT" || c == "EACCES") << c;
    }
  }
  EXPECT_EQ(r.out.find(canary.secret()), std::string::npos);
  EXPECT_EQ(canary.Changes(), "");
}

TEST(ProcEscape, CallersSecretEnvironmentIsNeverVisible) {
  std::string secret = "SECRET-" + RandomToken(32);
  ScopedEnv env("SENTRY_SECRET_CANARY", secret);
  for (bool root : {false, true}) {
    SCOPED_TRACE(root ? "--root" : "uid 1000");
    std::vector<std::string> flags;
    if (root) flags.push_back("--root");
    ProcessResult r = RunPy(std::string(kProcWalk) + R"PY(
for p in ["/proc/self/environ", "/proc/1/environ", "/proc/2/environ", "/proc/3/environ",
          "/proc/thread-self/environ", f"/proc/{os.getpid()}/environ",
          f"/proc/{os.getppid()}/environ", "/proc/self/cmdline", "/proc/1/cmdline",
          "/proc/self/status", "/proc/1/status"]:
    t("read " + p, lambda: open(p, "rb").read())
t("env_has_var", lambda: [k for k in os.environ if "SECRET" in k])
)PY",
                            flags);
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(r.out.find(secret), std::string::npos) << "the caller's secret leaked:\n" << r.out;
    EXPECT_EQ(r.err.find(secret), std::string::npos) << "the caller's secret leaked:\n" << r.err;
    Results res = ParseResults(r.out);
    EXPECT_EQ(Value(res, "env_has_var"), "[]");
    // A program run in the sandbox (exec, not just the first process) neither.
    ProcessResult e = sentry::testing::RunSentry(flags, {"/usr/bin/env"});
    ASSERT_EQ(e.exit_code, 0) << Describe(e);
    EXPECT_EQ(e.out.find(secret), std::string::npos) << e.out;
    EXPECT_EQ(e.out.find("SENTRY_SECRET_CANARY"), std::string::npos) << e.out;
  }
}

TEST(ProcEscape, ProcShowsNothingOfTheHost) {
  Canary canary("/tmp");
  // What would identify the host: its mount sources, our cwd, the canary.
  std::vector<std::string> host_markers = {canary.secret(), canary.dir(), HostOnlyCwd()};
  if (auto mounts = ReadFile("/proc/self/mounts")) {
    // The device of the host's root filesystem (e.g. /dev/vda).
    std::istringstream in(*mounts);
    std::string src, target;
    while (in >> src >> target) {
      if (target == "/" && src.rfind("/dev/", 0) == 0) host_markers.push_back(src);
      in.ignore(1 << 20, '\n');
    }
  }
  ProcessResult r = RunPy(kProcWalk);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (const std::string& m : host_markers) {
    EXPECT_EQ(r.out.find(m), std::string::npos) << "host detail \"" << m << "\" in /proc:\n"
                                                << r.out;
  }
  // Its mount table is the sandbox's: no host filesystem appears in it.
  EXPECT_EQ(r.out.find("/work"), std::string::npos);
  EXPECT_EQ(canary.Changes(), "");
}

}  // namespace
}  // namespace sentry::security
