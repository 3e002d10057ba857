// sentry run: the command line (run_flags.h), the limits file under it, and
// the run. Every error is one line on stderr, or with --json one result
// object on stdout, and exit code 125.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "sentry/base/log.h"
#include "sentry/cli/commands.h"
#include "sentry/cli/flag_values.h"
#include "sentry/cli/limits_file.h"
#include "sentry/cli/run_flags.h"
#include "sentry/run/pool.h"
#include "sentry/run/result.h"
#include "sentry/run/run.h"

namespace sentry::cli {
namespace {

int Fail(const std::string& problem, bool json, bool hint = false) {
  if (json) {
    RunResult r;
    r.exit_code = kExitSentryError;
    r.error = problem;
    PrintOutcome(r, true, 0);
  } else {
    std::fprintf(stderr, "sentry run: %s%s\n", problem.c_str(),
                 hint ? " (see 'sentry run --help')" : "");
  }
  return kExitSentryError;
}

// The log must be writable before the guest runs: a run whose record cannot
// be kept is refused, not run and then lost.
std::string CheckLog(const std::string& path) {
  if (path.empty()) return "";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return absl::StrCat("--log ", path, ": ", std::strerror(errno));
  close(fd);
  return "";
}

}  // namespace

int RunCommand(const std::vector<std::string>& args) {
  bool json = WantsJson(args);
  RunFlags flags;
  const char* pool_env = getenv("SENTRY_POOL");
  if (pool_env) flags.pool = pool_env;
  FlagsOutcome parsed = ParseRunFlags(args, &flags);
  if (parsed.kind == FlagsOutcome::Kind::kHelp) {
    std::fputs(parsed.text.c_str(), stdout);
    return 0;
  }
  if (parsed.kind == FlagsOutcome::Kind::kError) return Fail(parsed.text, json, true);
  if (!flags.limits_file.empty()) {
    // The file sets the limits; flags given on the command line win over it,
    // wherever they stand, so the flags are parsed again on top of the file.
    RunFlags with_file;
    with_file.pool = flags.pool;
    if (std::string why = ApplyLimitsFile(flags.limits_file, &with_file.options); !why.empty()) {
      return Fail(why, json);
    }
    parsed = ParseRunFlags(args, &with_file);
    if (parsed.kind == FlagsOutcome::Kind::kError) return Fail(parsed.text, json, true);
    flags = std::move(with_file);
  }
  RunOptions& o = flags.options;
  if (std::string why = CheckAgainstHost(o); !why.empty()) return Fail(why, json);
  if (std::string why = CheckLog(o.log_path); !why.empty()) return Fail(why, json);
  std::string why;
  if (!flags.pool.empty() && !o.mounts.empty()) {
    why = "-v mounts need a cold start";
  } else if (!flags.pool.empty() && PoolCanServe(o, &why)) {
    if (std::optional<int> code = RunInPool(flags.pool, o, &why)) return *code;
  }
  // On sentry's stderr (a --json result stays clean), like every notice.
  if (!flags.pool.empty() && !why.empty()) {
    log::Info(absl::StrCat("notice: a cold start (", why, ")"));
  }
  return RunSandbox(o);
}

}  // namespace sentry::cli
