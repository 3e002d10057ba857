// The exec channel: how `sentry exec` asks a container's monitor for a
// second guest process (see sentry/run/exec_guest.cc and sentry/oci/exec.cc).
//
// The monitor listens on a unix socket in the container's state directory
// (0600 in a root-owned directory: the engine's, never the guest's, whose
// mount view holds no such path and whose connect() is the sentry's to
// answer). One message each way per connection: a 4-byte length, then that
// many bytes of JSON; the fds that come with it travel with the length.
#ifndef SENTRY_RUN_EXEC_WIRE_H_
#define SENTRY_RUN_EXEC_WIRE_H_

#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "loader/landlock.h"
#include "sentry/base/unique_fd.h"

namespace sentry {

// The largest message: the go message's strings (kMaxLaunchBytes) with room
// for JSON's quoting.
inline constexpr size_t kMaxExecMessage = 8 << 20;
// How long either side waits for the other's message.
inline constexpr int kExecWireTimeoutSec = 10;

absl::Status SendExecMessage(int sock, const std::string& json, std::span<const int> fds);
// Fills `fds` with those that came (the rest stay invalid).
absl::StatusOr<std::string> ReceiveExecMessage(int sock, std::span<UniqueFd> fds);
// SO_RCVTIMEO and SO_SNDTIMEO of kExecWireTimeoutSec.
void SetExecWireTimeouts(int sock);

// The run's guest Landlock domain in the monitor's answer, so that a process
// exec'd into the sandbox gets the same (ParseLandlockJson: false if the
// value is malformed; a missing one is an empty plan).
nlohmann::json LandlockJson(const LandlockPlan& plan);
bool ParseLandlockJson(const nlohmann::json& j, LandlockPlan* plan);

}  // namespace sentry

#endif  // SENTRY_RUN_EXEC_WIRE_H_
