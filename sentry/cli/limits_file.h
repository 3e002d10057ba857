// --limits-file: the limits as the JSON object agent code already passes
// around ({"timeoutMs": 5000, "memoryMb": 256, ...}), applied under the flags.
#ifndef SENTRY_CLI_LIMITS_FILE_H_
#define SENTRY_CLI_LIMITS_FILE_H_

#include <string>

#include "sentry/run/run.h"

namespace sentry::cli {

// Reads the file at `path` and sets the limits it names in *o. Strict: an
// unknown key, a mistyped or out-of-range value, or a file that is not one
// JSON object is an error (a typo must not silently leave a limit at its
// default). Returns "" on success, else what is wrong, naming the key.
std::string ApplyLimitsFile(const std::string& path, RunOptions* o);

}  // namespace sentry::cli

#endif  // SENTRY_CLI_LIMITS_FILE_H_
