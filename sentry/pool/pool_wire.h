// The messages between `sentry run --pool` (the client) and a warm sandbox of
// `sentry pool` (see pool.h), over a unix stream socket:
//
//   client → sandbox  the request: u32 length, then records (u8 tag, u32
//                     length, bytes), with the client's fds 0, 1, 2 attached
//                     (SCM_RIGHTS)
//   sandbox → client  'A' (accepted: the run starts), or 'R', u32 length and
//                     the reason (refused: the client runs cold instead)
//   client → sandbox  i32 signal numbers the client received, any time
//   sandbox → client  i32 exit code, at the end
//
// Both ends are the same user's (the sandbox checks SO_PEERCRED), but the
// decoder still bounds every length and rejects what it does not know.
#ifndef SENTRY_POOL_POOL_WIRE_H_
#define SENTRY_POOL_POOL_WIRE_H_

#include <array>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "sentry/base/unique_fd.h"
#include "sentry/run/run.h"

namespace sentry::pool {

inline constexpr size_t kMaxRequestBytes = 8 << 20;

struct Request {
  RunOptions options;
  std::string cwd;    // the client's: relative host paths are resolved there
  std::string shape;  // ShapeOf(options) as the client computed it
};

// What a sandbox must be made with to serve o: the options a request cannot
// change once the sandbox exists.
std::string ShapeOf(const RunOptions& o);
// Gives o the shape's values of those options (what a request decoded here
// leaves at their defaults).
void TakeShape(const RunOptions& shape, RunOptions* o);

std::string EncodeRequest(const RunOptions& o, const std::string& cwd);
absl::StatusOr<Request> DecodeRequest(std::string_view body);

// The request's framing, with fds 0-2 attached. false (errno set) on failure.
bool SendRequest(int sock, const std::string& body);
// The same with the given fds as the run's 0, 1, 2 (an in-process caller's),
// and optionally two more: where the guest's stdout and stderr are copied as
// they come (RunOptions::stdout_tee_fd, stderr_tee_fd).
bool SendRequest(int sock, const std::string& body, std::span<const int> fds);
// Reads a request and the fds sent with it: 0-2 always, the tees if sent.
absl::StatusOr<std::string> ReceiveRequest(int sock, std::array<UniqueFd, 5>* fds);

// The sandbox's answer to a request: accepted, or refused with a reason.
bool SendVerdict(int sock, bool accepted, const std::string& reason);
// true if accepted; false with *reason otherwise (the connection's end too).
bool ReceiveVerdict(int sock, std::string* reason);

}  // namespace sentry::pool

#endif  // SENTRY_POOL_POOL_WIRE_H_
