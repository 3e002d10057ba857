// Running the real sentry binary as an ordinary user. As root (CI) the test
// makes its own users and runs sentry as each of them through runuser:
// "sentry-rl-single", a system user with no subordinate range, and
// "sentry-rl-subid", with a range in /etc/subuid and /etc/subgid (made if
// missing; nothing else of the host's is changed, and nothing removed). As
// any other user it runs sentry as that user.
#ifndef SENTRY_TESTS_ROOTLESS_ROOTLESS_UTIL_H_
#define SENTRY_TESTS_ROOTLESS_ROOTLESS_UTIL_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "tests/util/subprocess.h"

namespace sentry::testing {

struct Caller {
  std::string name;  // "" when the test's own user
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

// The callers to test as: the two users above as root, else the caller itself.
std::vector<Caller> RootlessCallers();

// The first id of the caller's subordinate uid range where sentry will map
// it (a range in /etc/subuid and /etc/subgid, newuidmap installed), else 0:
// where sentry runs in subordinate-range mode.
uint32_t RangeStart(const Caller& c);

// argv (argv[0] a path) run as the caller, with a clean environment (PATH,
// HOME, USER) plus env; `ulimit_u` > 0 sets its RLIMIT_NPROC first.
ProcessResult RunAsCaller(const Caller& c, const std::vector<std::string>& argv,
                          const std::vector<std::string>& env = {}, const std::string& input = "",
                          double timeout_sec = 60, long ulimit_u = 0);

// `sentry run FLAGS -- CMD` as the caller.
ProcessResult SentryAs(const Caller& c, const std::vector<std::string>& flags,
                       const std::vector<std::string>& cmd, const std::string& input = "");

// A fresh directory in the caller's home (its own, mode 0700), removed at the end.
class CallerDir final {
 public:
  explicit CallerDir(const Caller& c);
  ~CallerDir();
  CallerDir(const CallerDir&) = delete;
  CallerDir& operator=(const CallerDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes a file owned by the caller (mode as given), returns its path.
  std::string Write(const std::string& rel, const std::string& data, int mode = 0644) const;

 private:
  const Caller& c_;
  std::string path_;
};

std::string Describe(const ProcessResult& r);

// A host file's text ("" if unreadable).
std::string ReadFileOr(const std::string& path);

}  // namespace sentry::testing

#endif  // SENTRY_TESTS_ROOTLESS_ROOTLESS_UTIL_H_
