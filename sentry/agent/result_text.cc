#include "sentry/agent/result_text.h"

#include "absl/strings/str_cat.h"

namespace sentry::agent {
namespace {

using nlohmann::json;

// Moves i back to the start of a UTF-8 sequence.
size_t Boundary(const std::string& s, size_t i) {
  while (i > 0 && i < s.size() && (static_cast<unsigned char>(s[i]) & 0xc0) == 0x80) --i;
  return i;
}

std::string Str(const json& v) {
  if (v.is_null()) return "none";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace

std::string Clip(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t head = Boundary(s, max / 2);
  size_t tail = Boundary(s, s.size() - max / 2);
  return absl::StrCat(s.substr(0, head), "\n[... ", tail - head, " bytes clipped ...]\n",
                      s.substr(tail));
}

std::string StatusLine(const json& r) {
  std::string line = absl::StrCat("[exit code ", Str(r.value("exitCode", json())), "; timedOut ",
                                  r.value("timedOut", false) ? "true" : "false", "; limit ",
                                  Str(r.value("limit", json())));
  if (r.contains("signal") && !r["signal"].is_null()) {
    absl::StrAppend(&line, "; signal ", Str(r["signal"]));
  }
  if (r.contains("error") && !r["error"].is_null()) {
    absl::StrAppend(&line, "; sentry error: ", Str(r["error"]));
  }
  for (const char* s : {"stdoutDroppedBytes", "stderrDroppedBytes"}) {
    if (r.value(s, 0) > 0) absl::StrAppend(&line, "; ", s, " ", r.value(s, 0));
  }
  const json denied = r.value("denied", json::array());
  if (!denied.empty()) absl::StrAppend(&line, "; denied:");
  for (const json& d : denied) {
    absl::StrAppend(&line, " ", Str(d.value("argument", json(""))), " (",
                    Str(d.value("error", json(""))), ": ", Str(d.value("hint", json(""))), ")");
  }
  line += "]";
  return Clip(line, kMaxStatusText);
}

bool RunFailed(const json& r) {
  return r.value("exitCode", 1) != 0 || r.value("timedOut", false) ||
         !r.value("error", json()).is_null();
}

}  // namespace sentry::agent
