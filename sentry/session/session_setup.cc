#include "sentry/session/session_setup.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_join.h"
#include "sentry/session/kernel_source.h"

namespace sentry::session {

absl::StatusOr<std::unique_ptr<SessionManager>> MakeSessionManager(
    const agent::ServerFlags& flags, const std::vector<std::string>& preload) {
  const agent::SessionFlags& f = flags.sessions;
  if (f.max_sessions == 0) return std::unique_ptr<SessionManager>();
  if (f.idle_timeout_sec <= 0 || f.max_lifetime_sec <= 0) {
    return absl::InvalidArgumentError(
        "--session-idle-timeout and --session-max-lifetime must be positive");
  }
  std::string kernel(SessionKernelSource());
  if (!f.kernel_file.empty()) {
    std::ifstream in(f.kernel_file);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return absl::InvalidArgumentError("cannot read the session kernel " + f.kernel_file);
    kernel = text.str();
  }
  ManagerOptions o;
  o.policy = flags.policy;
  o.log_path = flags.log_path;
  o.spares = f.spares;
  o.fork_spares = f.fork_spares;
  o.max_sessions = f.max_sessions;
  o.max_sessions_per_tenant = f.max_per_token;
  o.idle_timeout_sec = f.idle_timeout_sec;
  o.max_lifetime_sec = f.max_lifetime_sec;
  o.kernel_argv = {"python3", "-c", kernel};
  if (!preload.empty()) {
    o.kernel_argv.push_back("--preload");
    o.kernel_argv.push_back(absl::StrJoin(preload, ","));
  }
  absl::StatusOr<std::unique_ptr<SandboxLauncher>> launcher =
      SandboxLauncher::Start(flags.policy.base);
  if (!launcher.ok()) return launcher.status();
  return std::make_unique<SessionManager>(std::move(o), std::move(*launcher));
}

}  // namespace sentry::session
