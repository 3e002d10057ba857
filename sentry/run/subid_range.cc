#include "sentry/run/subid_range.h"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sentry/base/unique_fd.h"

namespace sentry {
namespace {

std::string ReadSmallFile(const char* path) {
  std::ifstream in(path);
  std::string text;
  char buf[4096];
  // /etc/subuid is a few lines; a huge one is read no further than 1 MiB.
  while (in && text.size() < (1 << 20)) {
    in.read(buf, sizeof(buf));
    text.append(buf, static_cast<size_t>(in.gcount()));
  }
  return text;
}

// The helper where Debian and others install it (not $PATH: a setuid
// program the sentry chooses, not one the environment names).
std::string FindHelper(const char* name) {
  for (const char* dir : {"/usr/bin/", "/usr/sbin/", "/bin/", "/sbin/"}) {
    std::string path = absl::StrCat(dir, name);
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0) {
      return path;
    }
  }
  return "";
}

std::string UserName(uid_t uid) {
  passwd pw, *found = nullptr;
  std::vector<char> buf(16384);
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || !found) return "";
  return pw.pw_name;
}

struct Helper {
  pid_t pid = -1;
  int spawn_err = 0;
  UniqueFd err;  // its stderr
};

Helper Start(const std::string& path, pid_t target, uint32_t caller, const SubidRange& r) {
  Helper h;
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) {
    h.spawn_err = errno;
    return h;
  }
  UniqueFd read_end(p[0]), write_end(p[1]);
  std::vector<std::string> args = {path, std::to_string(target)};
  for (absl::string_view a : absl::StrSplit(MapArgs(caller, r), ' ')) args.emplace_back(a);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char env0[] = "PATH=/usr/bin:/bin";
  char env1[] = "LC_ALL=C";
  char* envp[] = {env0, env1, nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, write_end.get(), 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The sentry's blocked signals (its signalfd's) are not the helper's.
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  int err = posix_spawn(&h.pid, path.c_str(), &fa, &attr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (err != 0) {
    h.pid = -1;
    h.spawn_err = err;
    return h;
  }
  h.err = std::move(read_end);
  return h;
}

// Waits for the helper; "" if it mapped, else why not (its first line).
std::string Finish(Helper& h, const std::string& path) {
  if (h.pid < 0) return absl::StrCat("cannot run ", path, ": ", std::strerror(h.spawn_err));
  std::string text;
  char buf[512];
  ssize_t n;
  while (text.size() < 4096 && (n = read(h.err.get(), buf, sizeof(buf))) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (waitpid(h.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  std::string line(absl::StripAsciiWhitespace(text.substr(0, text.find('\n'))));
  if (line.empty()) line = absl::StrCat(path, " exited with status ", WEXITSTATUS(status));
  return line;
}

// Whether [start, start + count) is mapped in this process's user namespace
// (text: its uid_map or gid_map): the host's, or one that maps the range
// through, as sentry inside podman's namespace does not.
bool RangeIsMapped(const std::string& text, const SubidRange& r) {
  uint64_t first = r.start, end = uint64_t{r.start} + r.count, covered = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    uint64_t inside, outside, count;
    if (f.size() != 3 || !absl::SimpleAtoi(f[0], &inside) || !absl::SimpleAtoi(f[1], &outside) ||
        !absl::SimpleAtoi(f[2], &count)) {
      continue;
    }
    uint64_t lo = std::max(first, inside), hi = std::min(end, inside + count);
    if (lo < hi) covered += hi - lo;
  }
  return covered == end - first;
}

}  // namespace

SubidRange FindSubidRange(const std::string& text, const std::string& name, uint32_t id) {
  std::string id_text = std::to_string(id);
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, ':');
    if (f.size() != 3) continue;
    if (!(f[0] == id_text || (!name.empty() && f[0] == absl::string_view(name)))) continue;
    SubidRange r;
    if (!absl::SimpleAtoi(f[1], &r.start) || !absl::SimpleAtoi(f[2], &r.count) || r.count == 0 ||
        r.start == 0 || r.start > UINT32_MAX - r.count) {
      continue;
    }
    return r;
  }
  return {};
}

std::string MapArgs(uint32_t caller, const SubidRange& r) {
  return absl::StrCat("0 ", caller, " 1 1 ", r.start, " ", r.count);
}

SubidPlan PlanSubids(uid_t guest_uid, gid_t guest_gid) {
  SubidPlan p;
  p.caller_uid = getuid();
  p.caller_gid = getgid();
  std::string name = UserName(p.caller_uid);
  p.uids = FindSubidRange(ReadSmallFile("/etc/subuid"), name, p.caller_uid);
  p.gids = FindSubidRange(ReadSmallFile("/etc/subgid"), name, p.caller_uid);
  p.uids.count = std::min(p.uids.count, kMaxRangeIds);
  p.gids.count = std::min(p.gids.count, kMaxRangeIds);
  p.newuidmap = FindHelper("newuidmap");
  p.newgidmap = FindHelper("newgidmap");
  std::string who = name.empty() ? absl::StrCat("uid ", p.caller_uid) : name;
  if (p.uids.count == 0 || p.gids.count == 0) {
    p.why_not = absl::StrCat(who, " has no subordinate range in ",
                             p.uids.count == 0 ? "/etc/subuid" : "/etc/subgid");
  } else if (p.newuidmap.empty() || p.newgidmap.empty()) {
    p.why_not = "newuidmap/newgidmap are not installed (Debian: apt-get install uidmap)";
  } else if (!RangeIsMapped(ReadSmallFile("/proc/self/uid_map"), p.uids) ||
             !RangeIsMapped(ReadSmallFile("/proc/self/gid_map"), p.gids)) {
    p.why_not = "sentry runs in a user namespace that does not map the subordinate range";
  } else if (guest_uid > p.uids.count || guest_gid > p.gids.count) {
    p.why_not = absl::StrCat(who, "'s subordinate range (", p.uids.count, " uids, ", p.gids.count,
                             " gids) does not reach the guest's ids ", guest_uid, ":", guest_gid);
  } else {
    p.usable = true;
  }
  return p;
}

absl::Status MapWithHelpers(pid_t pid, const SubidPlan& plan) {
  // Both at once: each is an exec of a setuid program (about a millisecond).
  Helper u = Start(plan.newuidmap, pid, plan.caller_uid, plan.uids);
  Helper g = Start(plan.newgidmap, pid, plan.caller_gid, plan.gids);
  std::string why = Finish(u, plan.newuidmap);
  std::string gwhy = Finish(g, plan.newgidmap);
  if (why.empty()) why = gwhy;
  if (why.empty()) return absl::OkStatus();
  // Not FailedPrecondition: that is a kernel without namespaces, which a
  // run answers by going on without them (see Run::StartSandbox).
  return absl::PermissionDeniedError(absl::StrCat(
      "the user namespace wall: the subordinate range of uid ", plan.caller_uid, " (",
      plan.uids.start, "+", plan.uids.count, ", gids ", plan.gids.start, "+", plan.gids.count,
      ") could not be mapped: ", why,
      "; choices: fix /etc/subuid and /etc/subgid for this user (usermod --add-subuids/"
      "--add-subgids), --userns=single (the caller's one uid), or --no-namespaces"));
}

absl::Status ProbeSubids(const SubidPlan& plan) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return absl::InternalError("pipe");
  UniqueFd read_end(p[0]), write_end(p[1]);
  pid_t child = fork();
  if (child < 0) return absl::InternalError("fork");
  if (child == 0) {
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    char c = unshare(CLONE_NEWUSER) == 0 ? 'd' : 'x';
    (void)!write(write_end.get(), &c, 1);
    pause();  // until killed
    _exit(0);
  }
  write_end.Reset();
  char c = 0;
  absl::Status s = absl::OkStatus();
  if (read(read_end.get(), &c, 1) != 1 || c != 'd') {
    s = absl::FailedPreconditionError("the kernel refused an unprivileged user namespace");
  } else {
    s = MapWithHelpers(child, plan);
  }
  kill(child, SIGKILL);
  while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
  return s;
}

}  // namespace sentry
