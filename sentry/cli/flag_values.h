// The values of sentry run's flags, each checked on its own: what
// run_flags.cc's FlagSet calls. Each Add* returns "" when the value is taken,
// else what it needs (the flag's name is added by the caller).
#ifndef SENTRY_CLI_FLAG_VALUES_H_
#define SENTRY_CLI_FLAG_VALUES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sentry/run/run.h"

namespace sentry::cli {

// -e K=V, or -e K: the caller's K if it is set (nothing if not), as docker.
std::string AddEnv(const std::string& v, std::vector<std::string>* env);
// --env-file FILE: docker's format (K=V or K a line, # comments, no quoting).
std::string AddEnvFile(const std::string& path, std::vector<std::string>* env);
// -v HOST:GUEST[:ro|:rw]: HOST an existing directory (absolute or ./relative,
// resolved now), GUEST absolute, outside /proc and /dev, mounted once.
std::string AddMount(const std::string& v, std::vector<BindMount>* mounts);
// --copy HOST:GUEST.
std::string AddCopy(const std::string& v, RunOptions* o);
// --add-host NAME:IP.
std::string AddHost(const std::string& v, RunOptions* o);

// Sizes as docker reads them (units.h's RAMInBytes): a number (fractions
// allowed) with an optional unit b, k, m, g, t (binary, case-insensitive,
// "kb", "KiB" alike). A bare number is bare_unit bytes; bare_unit 0 refuses
// a bare number. False, with *why where there is more to say, on anything
// else or a result past 2^50.
bool ParseSize(const std::string& text, uint64_t bare_unit, uint64_t* out, std::string* why);

// --userns's value (auto, range or single) into *out; "" or why not.
std::string ParseIdMode(const std::string& v, IdMode* out);
// Seconds, fractions allowed, with an optional unit ms, s, m or h.
bool ParseDuration(const std::string& text, double* seconds);

// Refuses what this host cannot honour: --cpus above its CPUs, --memory above
// its RAM, with the host's figure. "" when the options fit. file: the
// options as a --limits-file alone set them (nullptr: none), so that a value
// the file gave is named by its key there, not by a flag nobody typed.
std::string CheckAgainstHost(const RunOptions& o, const RunOptions* file = nullptr);
// Refuses an allowlisted loopback or private IP literal without
// --unsafe-allow-private-address (net::RefusePrivateRule), naming the flag
// or the limits file's key that gave it.
std::string CheckAllowRules(const RunOptions& o, const RunOptions* file = nullptr);

}  // namespace sentry::cli

#endif  // SENTRY_CLI_FLAG_VALUES_H_
