// The sessions of a server (`sentry serve`, and `sentry mcp`), made from its
// flags: the launcher's zygote is forked here, so call this while the
// process still has one thread (before the warm pool and any server thread).
//
//   auto sessions = session::MakeSessionManager(flags, warm.preload);  // one thread yet
//   ...
//   if (*sessions) (*sessions)->Start();        // the reaper and the spares' refill
//   ... (*sessions)->Create(tenant, request) ... (session_manager.h)
//   (*sessions)->Shutdown();                    // at the server's end: every session ends
#ifndef SENTRY_SESSION_SESSION_SETUP_H_
#define SENTRY_SESSION_SESSION_SETUP_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sentry/agent/server_flags.h"
#include "sentry/session/session_manager.h"

namespace sentry::session {

// nullptr (not an error) when flags.sessions.max_sessions is 0. The kernel is
// sentry's own (kernel_source.h) unless --session-kernel names another;
// preload goes to it as --preload.
absl::StatusOr<std::unique_ptr<SessionManager>> MakeSessionManager(
    const agent::ServerFlags& flags, const std::vector<std::string>& preload);

}  // namespace sentry::session

#endif  // SENTRY_SESSION_SESSION_SETUP_H_
