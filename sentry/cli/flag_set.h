// Declaring a command's flags on a CLI11 app (Debian's libcli11-dev): one
// call per flag, its check and its help line together, so that `--flag=value`
// and `--flag value` work alike, every error is one line naming the flag, and
// --help lists the flags by group. Used by run_flags.cc, server_flags.cc and
// pool_command.cc.
//
//   FlagSet f(app);
//   f.Value("--size", kPool, "N", "sandboxes kept warm", Whole(&o.size, 1, 64, "needs 1 to 64"));
//   f.Switch("--python", kPool, "keep python3 warm", [&o] { o.python = true; });
#ifndef SENTRY_CLI_FLAG_SET_H_
#define SENTRY_CLI_FLAG_SET_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace sentry::cli {

// What a command's parse came to.
struct FlagsOutcome {
  enum class Kind { kRun, kHelp, kError } kind = Kind::kRun;
  std::string text;  // kHelp: the help text; kError: one line, what is wrong
};

// A flag's check: "" when the value is taken, else what it needs.
using Parse = std::function<std::string(const std::string&)>;

class FlagSet final {
 public:
  explicit FlagSet(CLI::App& app) : app_(app) {}
  FlagSet(const FlagSet&) = delete;
  FlagSet& operator=(const FlagSet&) = delete;

  // Declares only the flags one of whose names is in `names` (the others'
  // Value, Optional and Switch return nullptr): CLI11 checks each new flag
  // against every one before it, so declaring all of sentry run's 56 cost
  // 0.2-0.3 ms of every run's start. The caller parses again with every flag
  // declared where the names cannot tell (help, an error: see
  // ParseRunFlags).
  void Only(std::set<std::string> names) { only_ = std::move(names); }
  // The names a command line may use as flags: each `--name` (its `=value`
  // aside) and each letter of a `-abc` (grouped short flags, or `-m512m`),
  // up to the first `--`. A superset: the command's own words count too.
  static std::set<std::string> NamesIn(const std::vector<std::string>& args);

  // A flag with a value. Repeatable: each occurrence is checked in turn (a
  // single-valued flag given twice keeps the last, as docker does).
  CLI::Option* Value(const std::string& names, const char* group, const char* type,
                     const std::string& help, Parse parse);
  // A flag whose value is optional and given only after '=': `--flag` is
  // `--flag=dflt` (as strace's and docker's optional values).
  CLI::Option* Optional(const std::string& names, const char* group, const char* type,
                        const std::string& help, const std::string& dflt, Parse parse);
  // A flag without a value.
  CLI::Option* Switch(const std::string& names, const char* group, const std::string& help,
                      std::function<void()> set);

 private:
  bool Skipped(const std::string& names) const;

  CLI::App& app_;
  std::optional<std::set<std::string>> only_;
  std::string scratch_;  // Optional's raw value (each() has checked and stored it)
};

// The checks most flags need. `need` is what the flag says when refused.
Parse Text(std::string* out, const char* need);
template <typename T>
Parse Whole(T* out, T lo, T hi, const char* need) {
  return [=](const std::string& v) -> std::string {
    T n;
    if (!absl::SimpleAtoi(v, &n) || n < lo || n > hi) return need;
    *out = n;
    return "";
  };
}
// A SIZE as flag_values.h's ParseSize reads it (512m, 1.5g, 64MiB; a bare
// number is bare_unit bytes), from min to max bytes.
Parse Size(uint64_t* out, uint64_t bare_unit, uint64_t min, uint64_t max, const char* need);
inline Parse Size(uint64_t* out, uint64_t bare_unit, uint64_t min, const char* need) {
  return Size(out, bare_unit, min, UINT64_MAX, need);
}
// Seconds, with an optional unit ms, s, m or h (0 for none).
Parse Duration(double* out);
// A CPU quota: a positive fraction (CheckAgainstHost caps it at the host's).
Parse Cpus(double* out);
// --log-level: the sentry's own diagnostics (base/log.h), and its help.
Parse LogLevel();
inline constexpr char kLogLevelHelp[] =
    "how much the sentry says of itself on stderr: trace, debug, info (default), warn, "
    "error or off (also SENTRY_LOG_LEVEL)";
// A comma-separated list of dotted Python module names (--preload).
Parse Modules(std::vector<std::string>* out);

// The help text: the app's description, each group's flags with their help
// wrapped beside them, -h, and the app's footer.
std::string Help(const CLI::App& app, const std::vector<const char*>& groups);

// Parses args (a command's flags, no operands) on app: kHelp for -h/--help,
// kError with one line for a bad value, an unknown flag or an operand.
FlagsOutcome ParseFlagsOnly(CLI::App& app, const std::vector<std::string>& args);

// " (did you mean --timeout?)" for a mistyped flag (its "=value" aside): the
// nearest of known by edit distance, if near enough; else "".
std::string DidYouMean(const std::string& given, const std::vector<std::string>& known);
// The same against the flags defined on app.
std::string DidYouMean(const std::string& given, const CLI::App& app);
// "unknown flag X", with a did-you-mean where one is near.
std::string UnknownFlag(const std::string& given, const CLI::App& app);

// Says why on stderr, one line ("sentry pool: WHY (see 'sentry pool
// --help')"), and returns the exit code of a usage error, 125.
int UsageError(const char* command, const std::string& why);

}  // namespace sentry::cli

#endif  // SENTRY_CLI_FLAG_SET_H_
