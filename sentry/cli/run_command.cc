// sentry run: the command line (run_flags.h), the limits file under it, and
// the run. Every error is one line on stderr, or with --json one result
// object on stdout, and exit code 125.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "sentry/base/log.h"
#include "sentry/cli/commands.h"
#include "sentry/cli/flag_values.h"
#include "sentry/cli/limits_file.h"
#include "sentry/cli/run_flags.h"
#include "sentry/pool/pool.h"
#include "sentry/run/result.h"
#include "sentry/run/run.h"
#include "sentry/run/terminal.h"

namespace sentry::cli {
namespace {

int Fail(const std::string& problem, bool json, bool hint = false) {
  if (json) {
    RunResult r;
    r.exit_code = kExitSentryError;
    r.error = problem;
    r.notices = log::TakeNotices();
    PrintOutcome(r, true, 0);
  } else {
    std::fprintf(stderr, "sentry run: %s%s\n", problem.c_str(),
                 hint ? " (see 'sentry run --help')" : "");
  }
  return kExitSentryError;
}

// A -v mount under the home while -w moved the cwd elsewhere: a relative
// path (out/result.txt) then names the cwd's, not the mount's, and a write
// there stays in memory. Said, as every run whose cwd is not the home.
void NoticeMountsBesideCwd(const RunOptions& o) {
  const std::string home = "/home/sandbox";
  if (o.workdir.empty() || o.workdir == home) return;
  for (const BindMount& m : o.mounts) {
    if (m.guest_path.rfind(home + "/", 0) != 0) continue;
    if (m.guest_path.rfind(o.workdir + "/", 0) == 0 || o.workdir == "/") continue;
    std::string rel = m.guest_path.substr(home.size() + 1);
    log::Notice(absl::StrCat("notice: the guest's cwd is ", o.workdir, " (-w), not ", home,
                             ": a relative path such as ", rel, "/ names ", o.workdir, "/", rel,
                             ", not the -v mount at ", m.guest_path));
    return;
  }
}

// With a terminal for its stdin (-t, or sentry's stdin one) the guest is an
// interactive session, whose length is its user's: no default timeout, as
// docker and podman have none (^C or ^D ends it). --timeout or the limits
// file's timeoutMs still hold.
void NoTimeoutOnATerminal(RunOptions* o, bool given) {
  if (given) return;
  if (GuestTerminal::FdsFor(o->tty, o->json, o->stdin_path) & 1) o->timeout_sec = 0;
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
  std::optional<RunOptions> file;  // what the limits file alone sets
  if (!flags.limits_file.empty()) {
    // The file sets the limits; flags given on the command line win over it,
    // wherever they stand, so the flags are parsed again on top of the file.
    RunFlags with_file;
    with_file.pool = flags.pool;
    if (std::string why = ApplyLimitsFile(flags.limits_file, &with_file.options); !why.empty()) {
      return Fail(why, json);
    }
    file = with_file.options;
    parsed = ParseRunFlags(args, &with_file);
    if (parsed.kind == FlagsOutcome::Kind::kError) return Fail(parsed.text, json, true);
    flags = std::move(with_file);
  }
  RunOptions& o = flags.options;
  const RunOptions* from_file = file ? &*file : nullptr;
  if (std::string why = CheckAgainstHost(o, from_file); !why.empty()) return Fail(why, json);
  if (std::string why = CheckAllowRules(o, from_file); !why.empty()) return Fail(why, json);
  NoTimeoutOnATerminal(
      &o, flags.timeout_given || (file && file->timeout_sec != RunOptions().timeout_sec));
  o.copy_hint = "copy other programs in with --copy HOST:GUEST";
  NoticeMountsBesideCwd(o);
  if (std::string why = CheckLog(o.log_path); !why.empty()) return Fail(why, json);
  std::string why;
  if (!flags.pool.empty() && !o.mounts.empty()) {
    why = "-v mounts need a cold start";
  } else if (!flags.pool.empty() && PoolCanServe(o, &why)) {
    if (std::optional<int> code = RunInPool(flags.pool, o, &why)) return *code;
  }
  // On sentry's stderr (a --json result stays clean), like every notice.
  if (!flags.pool.empty() && !why.empty()) {
    log::Notice(absl::StrCat("notice: a cold start (", why, ")"));
  }
  RunSandboxThenExit(o);
}

}  // namespace sentry::cli
