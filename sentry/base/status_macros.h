// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status, which Debian 12's Abseil
// (20220623) lacks. absl::Status is for the sentry's own machinery only.
#ifndef SENTRY_BASE_STATUS_MACROS_H_
#define SENTRY_BASE_STATUS_MACROS_H_

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::absl::Status status_macro_s = (expr);          \
    if (!status_macro_s.ok()) return status_macro_s; \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(SENTRY_STATUS_CONCAT(status_or_, __LINE__), lhs, expr)
#define SENTRY_STATUS_CONCAT_INNER(a, b) a##b
#define SENTRY_STATUS_CONCAT(a, b) SENTRY_STATUS_CONCAT_INNER(a, b)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

namespace sentry {

// An absl::Status for a failed host call: "what: strerror(errno)".
inline absl::Status ErrnoStatus(const std::string& what, int err = errno) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(err)));
}

}  // namespace sentry

#endif  // SENTRY_BASE_STATUS_MACROS_H_
