// --limits-file: a JSON object of limits, the names agent code uses.
#include "sentry/cli/limits_file.h"

#include <cmath>
#include <fstream>

#include "sentry/base/json_lite.h"

namespace sentry::cli {
namespace {

using json_lite::Value;

constexpr size_t kMaxLimitsFileBytes = 64 << 10;

constexpr const char* kKnownKeys =
    "timeoutMs, memoryMb, maxProcesses, cpus, diskMb, maxOutputBytes, nofile, network";

// A number in [lo, hi]; an integer unless `fraction`.
bool Number(const Value& v, double lo, double hi, bool fraction, double* out) {
  if (!v.is_number() || !std::isfinite(v.number) || v.number < lo || v.number > hi) return false;
  if (!fraction && v.number != std::floor(v.number)) return false;
  *out = v.number;
  return true;
}

}  // namespace

std::string ApplyLimitsFile(const std::string& path, RunOptions* o) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read the limits file " + path;
  std::string text(kMaxLimitsFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxLimitsFileBytes) return "the limits file is larger than 64 KiB";
  std::string why;
  std::optional<Value> doc = json_lite::Parse(text, &why);
  if (!doc) return "the limits file is not JSON: " + why;
  if (!doc->is_object()) return "the limits file must hold one JSON object";

  for (const auto& [key, v] : doc->object) {
    double n = 0;
    auto bad = [&](const std::string& want) {
      return "limits file: \"" + key + "\" must be " + want;
    };
    if (key == "timeoutMs") {
      if (!Number(v, 0, 1e12, false, &n)) return bad("a number of milliseconds (0: none)");
      o->timeout_sec = n / 1000;
    } else if (key == "memoryMb") {
      if (!Number(v, 8, 1 << 24, false, &n)) return bad("a number of MiB, at least 8");
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
      if (v.is_object()) {
        const Value& list = v["allow"];
        if (list.kind != Value::Kind::kArray || list.array.empty() || v.object.size() != 1) {
          return bad("\"none\" or {\"allow\": [\"HOST[:PORT]\", ...]}");
        }
        for (const Value& item : list.array) {
          net::AllowRule rule;
          std::string why;
          if (!item.is_string() || !net::ParseAllowRule(item.string, &rule, &why)) {
            return bad("a list of HOST[:PORT] (" + why + ")");
          }
          o->net.allow.push_back(rule);
        }
      } else if (v.str() != "none") {
        return bad("\"none\" or {\"allow\": [\"HOST[:PORT]\", ...]}");
      }
    } else {
      return "limits file: unknown key \"" + key + "\" (known: " + kKnownKeys + ")";
    }
  }
  return "";
}

}  // namespace sentry::cli
