// SHA-256 of the code a run executed, for the audit log: OpenSSL's EVP digest.
#ifndef SENTRY_BASE_SHA256_H_
#define SENTRY_BASE_SHA256_H_

#include <string>
#include <string_view>

namespace sentry {

// The digest of data as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

}  // namespace sentry

#endif  // SENTRY_BASE_SHA256_H_
