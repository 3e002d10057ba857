// sentry run's command line: every flag, its help line and its check, parsed
// with CLI11 (Debian's libcli11-dev). `--flag=value` and `--flag value` both
// work, docker's short forms (-e, -v, -w, -m, -i, -t) are the same options,
// and sizes and durations read as docker reads them (units.h's RAMInBytes):
// "512m", "1.5g", "64MiB"; a bare number keeps sentry's meaning (MiB for
// --memory and --disk) except for docker's own -m, where docker means bytes.
//
// Adding a flag is one line in run_flags.cc's DefineFlags, e.g.
//   f.Value("--census", kOutput, "FILE", "write the census to FILE", Text(&o.census));
//   f.Switch("--trace", kOutput, "log every trapped syscall", &o.trace);
#ifndef SENTRY_CLI_RUN_FLAGS_H_
#define SENTRY_CLI_RUN_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sentry/run/run.h"

namespace sentry::cli {

struct RunFlags {
  RunOptions options;
  std::string limits_file;  // --limits-file
  std::string pool;         // --pool (or SENTRY_POOL)
};

struct FlagsOutcome {
  enum class Kind { kRun, kHelp, kError } kind = Kind::kRun;
  std::string text;  // kHelp: the help text; kError: one line, what is wrong
};

// Parses args (what follows `sentry run`) on top of *flags, which holds the
// defaults (or a limits file's values): only the flags given change it, so a
// flag always wins over the file.
FlagsOutcome ParseRunFlags(const std::vector<std::string>& args, RunFlags* flags);

// Whether args asks for --json before the command: a parse error is then
// answered with a JSON result, whatever else the line holds.
bool WantsJson(const std::vector<std::string>& args);

// Refuses what this host cannot honour: --cpus above its CPUs, --memory above
// its RAM, with the host's figure. "" when the options fit.
std::string CheckAgainstHost(const RunOptions& o);

// Sizes as docker reads them: a number (fractions allowed) with an optional
// unit b, k, m, g, t (binary, case-insensitive, "kb", "KiB" alike). A bare
// number is bare_unit bytes; bare_unit 0 refuses a bare number. False, with
// *why, on anything else or a result past 2^50.
bool ParseSize(const std::string& text, uint64_t bare_unit, uint64_t* out, std::string* why);
// Seconds, fractions allowed, with an optional unit ms, s, m or h.
bool ParseDuration(const std::string& text, double* seconds);

}  // namespace sentry::cli

#endif  // SENTRY_CLI_RUN_FLAGS_H_
