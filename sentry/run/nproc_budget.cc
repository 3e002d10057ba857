#include "sentry/run/nproc_budget.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/base/unique_fd.h"

namespace sentry {
namespace {

// From /proc/PID/status: the real uid (the first of "Uid:") and "Threads:".
bool ReadStatus(int proc_fd, const char* pid, uid_t* ruid, uint64_t* threads) {
  UniqueFd fd(openat(proc_fd, absl::StrCat(pid, "/status").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  char buf[4096];
  ssize_t n = read(fd.get(), buf, sizeof(buf) - 1);
  if (n <= 0) return false;
  bool got_uid = false, got_threads = false;
  for (absl::string_view line : absl::StrSplit(absl::string_view(buf, n), '\n')) {
    if (absl::ConsumePrefix(&line, "Uid:")) {
      std::vector<absl::string_view> f = absl::StrSplit(line, '\t', absl::SkipWhitespace());
      got_uid = !f.empty() && absl::SimpleAtoi(f[0], ruid);
    } else if (absl::ConsumePrefix(&line, "Threads:")) {
      got_threads = absl::SimpleAtoi(absl::StripAsciiWhitespace(line), threads);
    }
  }
  return got_uid && got_threads;
}

}  // namespace

CallerNproc ReadCallerNproc() {
  CallerNproc c;
  rlimit lim;
  if (getrlimit(RLIMIT_NPROC, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) c.limit = lim.rlim_cur;
  const uid_t me = getuid();
  int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return c;
  DIR* d = fdopendir(proc);
  if (!d) {
    close(proc);
    return c;
  }
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    uid_t ruid;
    uint64_t threads;
    if (ReadStatus(dirfd(d), e->d_name, &ruid, &threads) && ruid == me) c.used += threads;
  }
  closedir(d);
  return c;
}

NprocShare ShareCallerNproc(uint64_t pids, const CallerNproc& c, bool namespaces) {
  NprocShare s;
  s.pids = pids;  // 0: no cap
  if (c.limit != UINT64_MAX) {
    uint64_t left = c.limit > c.used ? c.limit - c.used : 0;
    uint64_t share = std::max<uint64_t>(left / 2, 1);  // the guest itself is one
    if (pids == 0 || share < pids) {
      s.pids = share;
      s.lowered =
          absl::StrCat("the pids cap is ", share, pids ? absl::StrCat(", not ", pids) : "",
                       ": half of what uid ", getuid(), " has left of its RLIMIT_NPROC (", c.limit,
                       ", ", c.used, " tasks running), so that its other programs can still fork");
    }
  }
  if (s.pids == 0) {
    s.rlimit = UINT64_MAX;  // no cap, no limit (RLIM_INFINITY)
  } else if (namespaces) {
    s.rlimit = s.pids;
  } else {
    s.rlimit = std::min(c.limit, c.used + s.pids);
  }
  return s;
}

}  // namespace sentry
