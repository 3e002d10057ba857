#include "sentry/run/exec_wire.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "sentry/base/fd_passing.h"

namespace sentry {

void SetExecWireTimeouts(int sock) {
  timeval tv{kExecWireTimeoutSec, 0};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

absl::Status SendExecMessage(int sock, const std::string& json, std::span<const int> fds) {
  if (json.size() > kMaxExecMessage) return absl::InvalidArgumentError("the request is too large");
  uint32_t len = static_cast<uint32_t>(json.size());
  if (SendWithFds(sock, &len, sizeof(len), fds) != sizeof(len)) {
    return absl::UnavailableError(absl::StrCat("cannot send: ", std::strerror(errno)));
  }
  size_t done = 0;
  while (done < json.size()) {
    ssize_t n = send(sock, json.data() + done, json.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrCat("cannot send: ", std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReceiveExecMessage(int sock, std::span<UniqueFd> fds) {
  uint32_t len = 0;
  Received r = ReceiveWithFds(sock, &len, sizeof(len), fds, MSG_WAITALL);
  if (r.bytes != sizeof(len)) return absl::UnavailableError("the peer sent no message");
  if (r.too_many) return absl::InvalidArgumentError("too many fds came with the message");
  if (len > kMaxExecMessage) return absl::InvalidArgumentError("the message is too large");
  std::string out(len, '\0');
  size_t done = 0;
  while (done < len) {
    ssize_t n = recv(sock, out.data() + done, len - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError("the message was cut short");
    done += static_cast<size_t>(n);
  }
  return out;
}

nlohmann::json LandlockJson(const LandlockPlan& plan) {
  nlohmann::json rules = nlohmann::json::array();
  for (const LandlockPlan::Rule& r : plan.rules) rules.push_back({r.path, r.access});
  return {{"abi", plan.abi},
          {"fs", plan.handled_fs},
          {"net", plan.handled_net},
          {"scoped", plan.scoped},
          {"rules", std::move(rules)}};
}

bool ParseLandlockJson(const nlohmann::json& j, LandlockPlan* plan) {
  *plan = LandlockPlan{};
  if (j.is_null()) return true;
  try {
    plan->abi = j.at("abi").get<int>();
    plan->handled_fs = j.at("fs").get<uint64_t>();
    plan->handled_net = j.at("net").get<uint64_t>();
    plan->scoped = j.at("scoped").get<uint64_t>();
    const nlohmann::json& rules = j.at("rules");
    if (!rules.is_array() || rules.size() > 64) return false;
    for (const nlohmann::json& r : rules) {
      plan->rules.push_back({r.at(0).get<std::string>(), r.at(1).get<uint64_t>()});
    }
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return true;
}

}  // namespace sentry
