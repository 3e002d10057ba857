// The frames between the sentry and a session's kernel (see
// /work/shared/SESSIONS.md, "Frames"): a 4-byte big-endian length, then that
// many bytes of UTF-8 JSON, an object.
//
// What the kernel writes is the guest's: a frame reader treats every byte as
// hostile. Lengths are bounded before anything is allocated, each frame is
// parsed with its size and depth bounded (agent/json_bounded.h), and the
// first bad frame makes the reader fail for good (the session then ends,
// "crashed"), never the server.
#ifndef SENTRY_SESSION_FRAMES_H_
#define SENTRY_SESSION_FRAMES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"

namespace sentry::session {

// The largest frame each side may send.
inline constexpr size_t kMaxFrameToKernel = 64 << 20;
inline constexpr size_t kMaxFrameFromKernel = 16 << 20;

// The 4-byte length and the JSON text of message (which must be an object).
std::string EncodeFrame(const nlohmann::json& message);

class FrameReader final {
 public:
  // Takes n bytes as they came and appends each whole frame to *out. false
  // (and *why) at the first frame that is too long, not JSON, nested too
  // deep or not an object; the reader then refuses everything after it.
  bool Feed(const char* data, size_t n, std::vector<nlohmann::json>* out, std::string* why);
  // Bytes of a frame begun but not whole.
  size_t pending() const { return buf_.size(); }

 private:
  std::string buf_;
  bool failed_ = false;
};

}  // namespace sentry::session

#endif  // SENTRY_SESSION_FRAMES_H_
