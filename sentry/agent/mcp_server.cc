#include "sentry/agent/mcp_server.h"

#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sentry/agent/json_bounded.h"
#include "sentry/agent/mcp_calls.h"
#include "sentry/agent/mcp_content.h"
#include "sentry/agent/mcp_sessions.h"
#include "sentry/agent/result_text.h"
#include "sentry/run/result.h"

namespace sentry::agent {
namespace {

using nlohmann::json;

// JSON-RPC 2.0's codes, and ours (-32000: the server is at its cap).
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kBusy = -32000;

constexpr const char* kVersions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// A member that must be a string, or "" (a client's field of another type is
// not a string: json::value would throw for it).
std::string TextOf(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string ErrorLine(const json& id, int code, const std::string& message) {
  return Dump({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

// A tool's arguments as a run request (run_request.h).
bool ToRequest(const std::string& tool, const json& args, json* request, std::string* why) {
  if (!args.is_object()) {
    *why = "arguments must be an object";
    return false;
  }
  json r = json::object();
  for (const auto& [key, v] : args.items()) {
    if (key == "code" && tool == "run_python") {
      r["language"] = "python";
      r["code"] = v;
    } else if (key == "argv" && tool == "run_command") {
      r["argv"] = v;
    } else if (key == "stdin" || key == "files" || key == "returnFiles") {
      r[key] = v;
    } else if (key == "timeoutMs") {
      r["limits"] = {{"timeoutMs", v}};
    } else {
      *why = absl::StrCat("unknown argument \"", key, "\" for ", tool);
      return false;
    }
  }
  if (tool == "run_python" && !r.contains("code")) {
    *why = "run_python needs \"code\"";
    return false;
  }
  if (tool == "run_command" && !r.contains("argv")) {
    *why = "run_command needs \"argv\"";
    return false;
  }
  *request = std::move(r);
  return true;
}

}  // namespace

std::optional<std::string> McpServer::HandleLine(const std::string& line) {
  json msg;
  std::string why;
  const size_t max_line = service_.flags().policy.max_request_bytes + (64 << 10);
  switch (ParseBoundedJson(line, max_line, kMaxJsonDepth, &msg, &why)) {
    case JsonRefusal::kNone:
      return HandleMessage(msg, -1);
    case JsonRefusal::kMalformed:
      return ErrorLine(nullptr, kParseError, absl::StrCat("Parse error: ", why));
    default:
      return ErrorLine(nullptr, kInvalidRequest,
                       absl::StrCat("Invalid Request: the message is ", why));
  }
}

std::optional<std::string> McpServer::HandleMessage(const json& msg, int cancel_fd,
                                                    std::shared_ptr<void>* memory) {
  if (!msg.is_object()) {
    return ErrorLine(nullptr, kInvalidRequest, "Invalid Request: not one JSON-RPC object");
  }
  bool has_id = msg.contains("id");
  json id = has_id ? msg["id"] : json();
  if (has_id && !id.is_string() && !id.is_number_integer()) {
    return ErrorLine(nullptr, kInvalidRequest, "Invalid Request: id must be a string or integer");
  }
  if (TextOf(msg, "jsonrpc") != "2.0" || !msg.contains("method") || !msg["method"].is_string()) {
    // A response from the client (we send no requests): nothing to answer.
    if (msg.contains("result") || msg.contains("error")) return std::nullopt;
    return ErrorLine(id, kInvalidRequest, "Invalid Request: needs jsonrpc \"2.0\" and a method");
  }
  std::string method = msg["method"].get<std::string>();
  auto p = msg.find("params");
  static const json kNoParams = json::object();
  const json& params = p == msg.end() ? kNoParams : *p;
  if (!params.is_object()) {
    return has_id ? std::optional(ErrorLine(id, kInvalidParams, "params must be an object"))
                  : std::nullopt;
  }
  if (!has_id) return std::nullopt;  // notifications: initialized, cancelled, ...
  Outcome out;
  json result;
  try {  // a field of an unexpected type that a check missed: an error, not a crash
    result = Dispatch(method, params, cancel_fd, &out);
  } catch (const json::exception& e) {
    return ErrorLine(id, kInvalidParams, absl::StrCat("Invalid params: ", e.what()));
  }
  if (memory) *memory = std::move(out.memory);
  if (out.error) return ErrorLine(id, out.code, out.message);
  return Dump({{"jsonrpc", "2.0"}, {"id", id}, {"result", result}});
}

json McpServer::Dispatch(const std::string& method, const json& params, int cancel_fd,
                         Outcome* out) {
  if (method == "initialize") {
    std::string want = TextOf(params, "protocolVersion");
    std::string version = kMcpProtocolVersion;
    for (const char* v : kVersions) {
      if (want == v) version = v;
    }
    return {{"protocolVersion", version},
            {"capabilities", {{"tools", {{"listChanged", false}}}}},
            {"serverInfo", {{"name", "sentry"}, {"title", "sentry"}, {"version", SentryVersion()}}},
            {"instructions",
             service_.sessions()
                 ? "Runs code in sandboxes: run_python for Python, run_command for any program. "
                   "Without a sessionId each call gets a fresh sandbox and nothing persists. "
                   "For a task of several steps, create_session once and pass its sessionId: "
                   "variables, imports and files then stay between calls, the last "
                   "expression's value and plots come back (images as image content), and "
                   "read_file, write_file and list_files reach its files. close_session at "
                   "the end."
                 : "Runs code in a fresh sandbox per call: run_python for Python, run_command "
                   "for any program. Files you pass are placed in the sandbox's home; nothing "
                   "persists between calls."}};
  }
  if (method == "ping") return json::object();
  if (method == "tools/list") {
    json tools = McpTools();
    if (service_.sessions()) AddSessionTools(&tools);
    return {{"tools", tools}};
  }
  if (method == "tools/call") return CallTool(params, cancel_fd, out);
  out->error = true;
  out->code = kMethodNotFound;
  out->message = absl::StrCat("Method not found: ", method);
  return nullptr;
}

json McpServer::CallTool(const json& params, int cancel_fd, Outcome* out) {
  bool* error = &out->error;
  int* code = &out->code;
  std::string* message = &out->message;
  std::string name = TextOf(params, "name");
  json request;
  std::string why;
  const json args = params.value("arguments", json::object());
  if (IsSessionCall(name, args)) {
    if (!service_.sessions()) {
      *error = true;
      *code = kInvalidParams;
      *message = absl::StrCat(name == "run_python" || name == "run_command"
                                  ? "sessionId: this server has no sessions"
                                  : "Unknown tool: " + name,
                              " (sentry mcp --max-sessions 0)");
      return nullptr;
    }
    McpCallError e;
    json result = CallSessionTool(*service_.sessions(), name, args, cancel_fd, &e);
    if (e.code != 0) {
      *error = true;
      *code = e.code;
      *message = e.message;
    }
    return result;
  }
  if (name != "run_python" && name != "run_command") {
    why = absl::StrCat("Unknown tool: ", name.empty() ? "(no name)" : name);
  } else if (!ToRequest(name, args, &request, &why)) {
    // why says it
  }
  if (!why.empty()) {
    *error = true;
    *code = kInvalidParams;
    *message = why;
    return nullptr;
  }
  if (!service_.Acquire()) {
    service_.metrics().RecordRejected("busy");
    *error = true;
    *code = kBusy;
    *message = "the server is running as many calls as it may; try again shortly";
    return nullptr;
  }
  AgentService::Answer a = service_.Run(request, false, nullptr, cancel_fd);
  service_.Release();
  out->memory = a.memory;
  if (a.status != 200) {
    *error = true;
    *code = a.status >= 500 ? kInternalError : kInvalidParams;
    try {
      json e = json::parse(a.body)["error"];
      std::string field = e.value("field", "");
      *message = field.empty() ? e.value("message", "")
                               : absl::StrCat(field, ": ", e.value("message", ""));
    } catch (const json::exception&) {
      *message = a.body;
    }
    return nullptr;
  }
  const json& r = a.result;
  return {{"content", RunContent(r)}, {"structuredContent", r}, {"isError", RunFailed(r)}};
}

void McpServer::Serve(int in_fd, int out_fd) {
  std::mutex write_mu;
  auto write_line = [&](const std::string& s) {
    std::string line = s + "\n";
    std::lock_guard<std::mutex> lock(write_mu);
    const char* p = line.data();
    size_t n = line.size();
    while (n > 0) {
      ssize_t w = write(out_fd, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;
      p += w;
      n -= static_cast<size_t>(w);
    }
  };
  // tools/calls run on detached threads (a long session makes many); the
  // last one to finish lets the end wait go.
  McpCalls calls;
  const size_t max_line = service_.flags().policy.max_request_bytes + (64 << 10);
  std::string buf, line;
  bool skipping = false;  // the rest of an overlong line
  char chunk[1 << 16];
  while (true) {
    ssize_t n = read(in_fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
      line = buf.substr(start, nl - start);
      if (skipping) {
        skipping = false;
        continue;
      }
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      json msg;
      std::string why;
      JsonRefusal refused = ParseBoundedJson(line, max_line, kMaxJsonDepth, &msg, &why);
      if (refused != JsonRefusal::kNone) {
        write_line(refused == JsonRefusal::kMalformed
                       ? ErrorLine(nullptr, kParseError, absl::StrCat("Parse error: ", why))
                       : ErrorLine(nullptr, kInvalidRequest,
                                   absl::StrCat("Invalid Request: the message is ", why)));
        continue;
      }
      if (McpCalls::IsCancel(msg)) {
        calls.Cancel(msg["params"]["requestId"]);
      } else if (McpCalls::IsToolCall(msg)) {
        auto call = calls.Begin(msg["id"]);
        std::thread([this, msg = std::move(msg), call, &write_line, &calls] {
          std::shared_ptr<void> memory;  // held until the answer is written
          std::optional<std::string> answer = HandleMessage(msg, call->cancel_fd(), &memory);
          // A cancelled call gets no answer (the spec's cancellation). The
          // answer is written before End: Serve may return once it is called.
          if (!calls.Cancelled(call) && answer) write_line(*answer);
          calls.End(call);
        }).detach();
      } else if (auto answer = HandleMessage(msg, -1)) {
        write_line(*answer);
      }
    }
    buf.erase(0, start);
    if (buf.size() > max_line) {
      if (!skipping) write_line(ErrorLine(nullptr, kInvalidRequest, "the message is too large"));
      skipping = true;
      buf.clear();
    }
  }
  calls.WaitNone();
}

}  // namespace sentry::agent
