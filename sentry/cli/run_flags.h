// sentry run's command line: every flag, its help line and its check, parsed
// with CLI11 (Debian's libcli11-dev). `--flag=value` and `--flag value` both
// work, docker's short forms (-e, -v, -w, -m, -i, -t) are the same options,
// and sizes and durations read as docker reads them (units.h's RAMInBytes):
// "512m", "1.5g", "64MiB"; a bare number keeps sentry's meaning (MiB for
// --memory and --disk) except for docker's own -m, where docker means bytes.
//
// Adding a flag is one line in run_flags.cc's DefineFlags, e.g.
//   f.Value("--census", kOutput, "FILE", "write the census to FILE",
//           Text(&o.census_path, "needs a file"));
//   f.Switch("--trace", kOutput, "log every trapped syscall", [&o] { o.trace = true; });
// Its check (Text, Whole, Size, or a lambda returning "" or what it needs)
// and its help line are all it takes: --help and cli_test pick it up.
#ifndef SENTRY_CLI_RUN_FLAGS_H_
#define SENTRY_CLI_RUN_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sentry/cli/flag_set.h"
#include "sentry/run/run.h"

namespace sentry::cli {

struct RunFlags {
  RunOptions options;
  std::string limits_file;     // --limits-file
  std::string pool;            // --pool (or SENTRY_POOL)
  bool timeout_given = false;  // --timeout on the command line (not the default)
};

// Parses args (what follows `sentry run`) on top of *flags, which holds the
// defaults (or a limits file's values): only the flags given change it, so a
// flag always wins over the file.
FlagsOutcome ParseRunFlags(const std::vector<std::string>& args, RunFlags* flags);

// Whether args asks for --json before the command: a parse error is then
// answered with a JSON result, whatever else the line holds.
bool WantsJson(const std::vector<std::string>& args);

}  // namespace sentry::cli

#endif  // SENTRY_CLI_RUN_FLAGS_H_
