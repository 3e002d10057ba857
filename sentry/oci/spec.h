// The OCI documents sentry writes itself: `spec` (a default config.json)
// and `features` (what this runtime supports, as runc's features JSON).
#ifndef SENTRY_OCI_SPEC_H_
#define SENTRY_OCI_SPEC_H_

#include <string>

namespace sentry::oci {

inline constexpr const char* kOciSpecVersion = "1.1.0";

std::string FeaturesJson();
// Writes dir/config.json; "" on success, else why not (it exists, ...).
std::string WriteDefaultSpec(const std::string& dir);

}  // namespace sentry::oci

#endif  // SENTRY_OCI_SPEC_H_
