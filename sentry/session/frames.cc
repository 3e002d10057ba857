#include "sentry/session/frames.h"

#include "absl/strings/str_cat.h"
#include "sentry/agent/json_bounded.h"

namespace sentry::session {

std::string EncodeFrame(const nlohmann::json& message) {
  std::string body = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  uint32_t n = static_cast<uint32_t>(body.size());
  std::string out(4, '\0');
  out[0] = static_cast<char>(n >> 24);
  out[1] = static_cast<char>(n >> 16);
  out[2] = static_cast<char>(n >> 8);
  out[3] = static_cast<char>(n);
  out += body;
  return out;
}

bool FrameReader::Feed(const char* data, size_t n, std::vector<nlohmann::json>* out,
                       std::string* why) {
  if (failed_) {
    *why = "an earlier frame was bad";
    return false;
  }
  buf_.append(data, n);
  size_t at = 0;
  while (buf_.size() - at >= 4) {
    auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(buf_[at + i])); };
    size_t len = (byte(0) << 24) | (byte(1) << 16) | (byte(2) << 8) | byte(3);
    if (len > kMaxFrameFromKernel) {
      failed_ = true;
      *why = absl::StrCat("a frame of ", len, " bytes (at most ", kMaxFrameFromKernel, ")");
      return false;
    }
    if (buf_.size() - at - 4 < len) break;
    nlohmann::json frame;
    agent::JsonRefusal refused =
        agent::ParseBoundedJson(std::string_view(buf_).substr(at + 4, len), kMaxFrameFromKernel,
                                agent::kMaxJsonDepth, &frame, why);
    if (refused != agent::JsonRefusal::kNone || !frame.is_object()) {
      failed_ = true;
      if (refused == agent::JsonRefusal::kNone) *why = "a frame that is not an object";
      return false;
    }
    out->push_back(std::move(frame));
    at += 4 + len;
  }
  buf_.erase(0, at);
  return true;
}

}  // namespace sentry::session
