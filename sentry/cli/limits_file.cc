// --limits-file: a JSON object of limits, the names agent code uses.
#include "sentry/cli/limits_file.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"

namespace sentry::cli {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxLimitsFileBytes = 64 << 10;

constexpr const char* kKnownKeys =
    "timeoutMs, memoryMb, maxProcesses, cpus, diskMb, maxOutputBytes, nofile, network";

// A number in [lo, hi]; an integer unless `fraction`.
bool Number(const Json& v, double lo, double hi, bool fraction, double* out) {
  if (!v.is_number()) return false;
  double n = v.get<double>();
  if (!std::isfinite(n) || n < lo || n > hi) return false;
  if (!fraction && n != std::floor(n)) return false;
  *out = n;
  return true;
}

// Parses text, refusing a key given twice in one object: JSON leaves that
// undefined and parsers differ on which one wins, so a limit would depend on
// the reader. "" on success, else what is wrong.
std::string ParseStrict(const std::string& text, Json* out) {
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto check = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) keys.emplace_back();
    if (event == Json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == Json::parse_event_t::key && !keys.empty() && duplicate.empty() &&
        !keys.back().insert(parsed.get<std::string>()).second) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  try {
    *out = Json::parse(text, check);
  } catch (const Json::parse_error& e) {
    return absl::StrCat("the limits file is not JSON: ", e.what());
  }
  if (!duplicate.empty()) return absl::StrCat("limits file: \"", duplicate, "\" is given twice");
  return "";
}

}  // namespace

std::string ApplyLimitsFile(const std::string& path, RunOptions* o) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::StrCat("cannot read the limits file ", path, ": ", std::strerror(errno));
  std::string text(kMaxLimitsFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad())
    return absl::StrCat("cannot read the limits file ", path, ": ", std::strerror(errno));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxLimitsFileBytes) return "the limits file is larger than 64 KiB";
  Json doc;
  if (std::string why = ParseStrict(text, &doc); !why.empty()) return why;
  if (!doc.is_object()) return "the limits file must hold one JSON object";

  for (const auto& [key, v] : doc.items()) {
    double n = 0;
    auto bad = [&key = key](const std::string& want) {
      return "limits file: \"" + key + "\" must be " + want;
    };
    if (key == "timeoutMs") {
      if (!Number(v, 0, 1e12, false, &n)) return bad("a number of milliseconds (0: none)");
      o->timeout_sec = n / 1000;
    } else if (key == "memoryMb") {
      // Up to 2^30 MiB (as --memory's 2^50 bytes): past the host's memory,
      // CheckAgainstHost says so with the host's figure.
      if (!Number(v, 8, 1 << 30, false, &n)) {
        return bad("a number of MiB, at least 8 and at most the host's memory");
      }
      o->memory_bytes = static_cast<uint64_t>(n) << 20;
    } else if (key == "maxProcesses") {
      if (!Number(v, 1, 1 << 22, false, &n)) return bad("a positive number");
      o->pids = static_cast<uint64_t>(n);
    } else if (key == "cpus") {
      if (!Number(v, 0, 1024, true, &n) || n == 0) return bad("a positive number, e.g. 0.5");
      o->cpus = n;
    } else if (key == "diskMb") {
      if (!Number(v, 1, 1 << 24, false, &n)) return bad("a positive number of MiB");
      o->disk_bytes = static_cast<uint64_t>(n) << 20;
    } else if (key == "maxOutputBytes") {
      if (!Number(v, 16, 1ull << 40, false, &n)) return bad("a number of bytes, at least 16");
      o->max_output = static_cast<uint64_t>(n);
    } else if (key == "nofile") {
      if (!Number(v, 16, 1 << 20, false, &n)) return bad("a number from 16 to 1048576");
      o->nofile = static_cast<uint64_t>(n);
    } else if (key == "network") {
      // "none", or {"allow": ["api.example.com:443", ...]}.
      const char* want = "\"none\" or {\"allow\": [\"HOST[:PORT]\", ...]}";
      if (v.is_object()) {
        auto list = v.find("allow");
        if (v.size() != 1 || list == v.end() || !list->is_array() || list->empty()) {
          return bad(want);
        }
        for (const Json& item : *list) {
          net::AllowRule rule;
          std::string why;
          if (!item.is_string() || !net::ParseAllowRule(item.get<std::string>(), &rule, &why)) {
            return bad("a list of HOST[:PORT] (" + why + ")");
          }
          o->net.allow.push_back(rule);
        }
      } else if (!v.is_string() || v.get<std::string>() != "none") {
        return bad(want);
      }
    } else {
      return "limits file: unknown key \"" + key + "\" (known: " + kKnownKeys + ")";
    }
  }
  return "";
}

}  // namespace sentry::cli
