// An OCI bundle's config.json, mapped onto one sandbox run: what sentry
// honours becomes RunOptions; what it does not is said in notes (logged once
// at create), never dropped silently; what it cannot run safely (hooks) is
// an error.
#ifndef SENTRY_OCI_BUNDLE_H_
#define SENTRY_OCI_BUNDLE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sentry/run/run.h"

namespace sentry::oci {

struct Bundle {
  std::string dir;     // absolute
  std::string rootfs;  // absolute
  RunOptions run;
  bool terminal = false;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> notes;  // fields not honoured, one line each
};

// Reads bundle_dir/config.json. Bind-mounted files of at most kMaxBoundFile
// bytes (an engine's /etc/hosts, /etc/hostname, /run/.containerenv) are
// read now and written into the sandbox.
absl::StatusOr<Bundle> LoadBundle(const std::string& bundle_dir);

// Parses config.json's text (for tests); dir is the bundle's directory.
absl::StatusOr<Bundle> ParseConfig(const std::string& text, const std::string& dir);

inline constexpr size_t kMaxBoundFile = 1 << 20;
// The dev.sentry.* annotations sentry reads (see MapAnnotations), as
// `features` lists them.
inline constexpr const char* kSentryAnnotations[] = {
    "dev.sentry.network", "dev.sentry.allow-net", "dev.sentry.unsafe-allow-private-address",
    "dev.sentry.timeout", "dev.sentry.disk-mb",   "dev.sentry.max-output",
    "dev.sentry.trace",   "dev.sentry.log"};
// Where dev.sentry.log=NAME puts its run log (one JSON line per container).
inline constexpr const char* kAnnotationLogDir = "/var/log/sentry";

}  // namespace sentry::oci

#endif  // SENTRY_OCI_BUNDLE_H_
