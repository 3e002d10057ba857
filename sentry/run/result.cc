#include "sentry/run/result.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "sentry/base/json_out.h"
#include "sentry/kernel/kernel.h"
#include "sentry/run/denial_hint.h"
#include "sentry/run/result_object.h"

namespace sentry {
namespace {

using Json = nlohmann::ordered_json;

Json Text(const std::string& s) { return JsonText(s); }
Json Opt(const std::optional<std::string>& v) { return v ? Text(*v) : Json(nullptr); }

// {"path": {"size": N, "truncated": false, "text": "..."}, ...}: text when the
// bytes are UTF-8, else "base64"; {"error": "..."} for a file not read.
Json FilesJson(const std::vector<ReturnedFile>& files) {
  Json out = Json::object();
  for (const ReturnedFile& f : files) {
    if (!f.error.empty()) {
      out[ValidUtf8(f.path)] = {{"error", Text(f.error)}};
      continue;
    }
    bool text = IsUtf8(f.data);
    Json body = {{"size", f.size}, {"truncated", f.data.size() < f.size}};
    body[text ? "text" : "base64"] = text ? f.data : absl::Base64Escape(f.data);
    out[ValidUtf8(f.path)] = std::move(body);
  }
  return out;
}

}  // namespace

nlohmann::ordered_json ResultObject(const RunResult& r) {
  Json walls = Json::array(), denied = Json::array();
  for (const std::string& w : r.walls) walls.push_back(Text(w));
  Json limits = Json::object();
  for (const auto& [kind, by] : r.limits) limits[kind] = Text(by);
  for (const DeniedOperation& d : r.denied) {
    denied.push_back({{"syscall", Text(d.syscall)},
                      {"argument", Text(d.argument)},
                      {"error", Text(d.error)},
                      {"hint", Text(d.hint)}});
  }
  Json j = {{"stdout", Text(r.stdout_text)},
            {"stderr", Text(r.stderr_text)},
            {"exitCode", r.exit_code},
            {"signal", Opt(r.signal)},
            {"timedOut", r.timed_out},
            {"limit", Opt(r.limit)},
            {"durationMs", r.duration_ms},
            {"cpuMs", r.cpu_ms},
            {"sentryCpuMs", r.sentry_cpu_ms},
            {"sentryThrottledMs", r.sentry_throttled_ms},
            {"peakMemoryBytes", r.peak_memory_bytes},
            {"stdoutDroppedBytes", r.stdout_dropped},
            {"stderrDroppedBytes", r.stderr_dropped},
            {"walls", std::move(walls)},
            {"limits", std::move(limits)},
            {"denied", std::move(denied)},
            {"network",
             {{"connections", r.net_connections},
              {"bytesOut", r.net_bytes_out},
              {"bytesIn", r.net_bytes_in}}},
            {"error", Opt(r.error)}};
  Json notices = Json::array();
  for (const std::string& n : r.notices) notices.push_back(Text(n));
  j["notices"] = std::move(notices);
  if (r.files) j["files"] = FilesJson(*r.files);
  if (!r.files_limit.empty()) j["filesLimit"] = Text(r.files_limit);
  if (!r.copy_out.empty()) {
    Json copies = Json::array();
    for (const CopyOutReport& c : r.copy_out) {
      Json skipped = Json::array();
      for (const std::string& s : c.skipped) skipped.push_back(Text(s));
      copies.push_back({{"from", Text(c.from)},
                        {"to", Text(c.to)},
                        {"files", c.files},
                        {"bytes", c.bytes},
                        {"skipped", std::move(skipped)},
                        {"error", c.error.empty() ? Json(nullptr) : Json(Text(c.error))}});
    }
    j["copyOut"] = std::move(copies);
  }
  if (r.tool_calls) {
    Json calls = Json::array();
    for (const ToolCall& c : *r.tool_calls) {
      calls.push_back({{"name", Text(c.name)},
                       {"argBytes", c.arg_bytes},
                       {"resultBytes", c.result_bytes},
                       {"ms", c.ms},
                       {"error", c.error.empty() ? Json(nullptr) : Json(Text(c.error))}});
    }
    j["toolCalls"] = std::move(calls);
  }
  j["version"] = SENTRY_VERSION;
  return j;
}

std::string ResultJson(const RunResult& r) { return JsonDump(ResultObject(r)); }

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? absl::StrCat("SIG", abbrev) : absl::StrCat("SIG", sig);
}

DeniedOperation ExplainDenial(const Denial& d, const DenialPlace& place) {
  DeniedOperation out;
  out.syscall = d.syscall;
  out.argument = d.call;
  out.error = strerrorname_np(d.err) ?: "E?";
  bool net = d.syscall == "connect" || d.syscall == "bind" || d.syscall == "sendto";
  if (!d.hint.empty()) {
    out.hint = d.hint;
  } else if (d.err == ENETUNREACH || (net && d.err == EACCES)) {
    out.hint = "network access is disabled in this sandbox; only its own loopback works";
  } else if (d.err == ECONNREFUSED) {
    out.hint = "nothing listens there inside the sandbox; the host's services are not reachable";
  } else if (d.err == EAFNOSUPPORT) {
    out.hint = "this kind of socket is not available in the sandbox";
  } else {
    out.hint = FileDenialHint(d.syscall, d.call, d.err, place);
  }
  return out;
}

const char* SentryVersion() { return SENTRY_VERSION; }

void PrintOutcome(const RunResult& r, bool json, double timeout_sec) {
  if (json) {
    std::string text = ResultJson(r) + "\n";
    fwrite(text.data(), 1, text.size(), stdout);
  } else if (r.error) {
    std::fprintf(stderr, "sentry: %s\n", r.error->c_str());
  } else if (r.timed_out) {
    std::fprintf(stderr, "sentry: timed out after %gs\n", timeout_sec);
  } else if (r.limit == "memory") {
    std::fprintf(stderr, "sentry: the guest was killed at its memory limit\n");
  }
  fflush(stdout);
  fflush(stderr);
}

}  // namespace sentry
