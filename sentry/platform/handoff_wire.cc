#include "sentry/platform/handoff_wire.h"

#include <climits>

#include "nlohmann/json.hpp"

namespace sentry {

std::string EncodeHandOff(const HandOffHeader& h) {
  nlohmann::json j = {{"v", 1}, {"pid", h.pid}, {"cwd", h.cwd}, {"env", h.env}};
  nlohmann::json relay = nlohmann::json::array();
  for (const auto& [fd, role] : h.relay) relay.push_back({fd, role});
  j["relay"] = relay;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<HandOffHeader> DecodeHandOff(std::string_view bytes, std::string* why) {
  if (bytes.size() > kHandOffMaxBytes) {
    *why = "hand-off header too long";
    return std::nullopt;
  }
  try {
    nlohmann::json j = nlohmann::json::parse(bytes);
    HandOffHeader h;
    if (j.at("v").get<int>() != 1) {
      *why = "unknown hand-off version";
      return std::nullopt;
    }
    h.pid = j.at("pid").get<pid_t>();
    h.cwd = j.at("cwd").get<std::string>();
    h.env = j.at("env").get<std::vector<std::string>>();
    const auto& relay = j.at("relay");
    if (!relay.is_array() || relay.size() > kHandOffMaxRelay) {
      *why = "hand-off relay list malformed";
      return std::nullopt;
    }
    for (const auto& r : relay) {
      int fd = r.at(0).get<int>(), role = r.at(1).get<int>();
      if (fd < 0 || role < 0 || role > 2) {
        *why = "hand-off relay entry out of range";
        return std::nullopt;
      }
      h.relay.emplace_back(fd, role);
    }
    if (h.pid <= 0 || h.cwd.empty() || h.cwd[0] != '/' || h.cwd.size() >= PATH_MAX) {
      *why = "hand-off pid or cwd out of range";
      return std::nullopt;
    }
    return h;
  } catch (const nlohmann::json::exception& e) {
    *why = std::string("malformed hand-off header: ") + e.what();
    return std::nullopt;
  }
}

}  // namespace sentry
