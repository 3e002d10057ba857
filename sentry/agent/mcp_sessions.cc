#include "sentry/agent/mcp_sessions.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <set>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "sentry/agent/mcp_content.h"
#include "sentry/agent/result_text.h"
#include "sentry/base/unique_fd.h"

namespace sentry::agent {
namespace {

using nlohmann::json;
using session::Answer;
using session::SessionManager;

constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr size_t kMaxFiles = 256;
constexpr size_t kMaxReturnFiles = 32;
constexpr size_t kMaxReturnFileBytes = 1 << 20;  // each, as a run's returnFiles
constexpr size_t kMaxReadBytes = 4 << 20;        // read_file
constexpr size_t kMaxListedLines = 500;

json Text(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }

json Result(json content, json structured, bool failed) {
  json r = {{"content", std::move(content)}, {"isError", failed}};
  if (!structured.is_null()) r["structuredContent"] = std::move(structured);
  return r;
}

json Fail(McpCallError* error, int code, std::string message) {
  error->code = code;
  error->message = std::move(message);
  return nullptr;
}

bool Invalid(McpCallError* error, std::string message) {
  Fail(error, kInvalidParams, std::move(message));
  return false;
}

std::string Str(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The sentence of a refusal (its body is {"error": {message, field?, reason?...}}).
std::string Why(const Answer& a) {
  const json body = a.body;
  const json e = body.value("error", json::object());
  std::string message = e.is_object() ? Str(e.value("message", json(""))) : "";
  if (e.is_object() && e.contains("field")) message = Str(e["field"]) + ": " + message;
  if (e.is_object() && e.contains("reason")) {
    absl::StrAppend(&message, " (at ", Str(e.value("at", json(""))), ")");
    if (e.contains("detail")) absl::StrAppend(&message, ": ", Str(e["detail"]));
    message += "; create_session makes a new one";
  }
  return message.empty() ? absl::StrCat("error ", a.status) : message;
}

// An answer other than 2xx: a result with isError when the model can act
// on it (no such session, ended, busy, a file missing...), else an error.
json Refused(const Answer& a, McpCallError* error) {
  if (a.status == 400 || a.status == 403 || a.status == 413) {
    return Fail(error, kInvalidParams, Why(a));
  }
  if (a.status >= 500 && a.status != 503 && a.status != 504) {
    return Fail(error, kInternalError, Why(a));
  }
  // No structuredContent: run_python's and run_command's would have to match
  // their outputSchema (a client checks it), and the text says it all.
  return Result(json::array({Text(Why(a))}), nullptr, true);
}

// Checks args's keys; "" if they are all known.
std::string Unknown(const std::string& tool, const json& args, std::set<std::string> known) {
  for (const auto& [key, v] : args.items()) {
    if (!known.count(key)) return absl::StrCat("unknown argument \"", key, "\" for ", tool);
  }
  return "";
}

bool StringArg(const json& args, const char* key, bool required, std::string* out,
               McpCallError* error) {
  auto it = args.find(key);
  if (it == args.end()) {
    if (required) Fail(error, kInvalidParams, absl::StrCat("needs \"", key, "\""));
    return !required;
  }
  if (!it->is_string()) {
    Fail(error, kInvalidParams, absl::StrCat("\"", key, "\" must be a string"));
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

// A file's content as the run request takes it: text, or {"base64": ...}.
bool Content(const json& v, std::string* bytes) {
  if (v.is_string()) {
    *bytes = v.get<std::string>();
    return true;
  }
  if (!v.is_object() || v.size() != 1 || !v.contains("base64") || !v["base64"].is_string()) {
    return false;
  }
  return absl::Base64Unescape(v["base64"].get<std::string>(), bytes);
}

// Interrupts the session's cell when the client cancels the call.
class CancelWatch final {
 public:
  CancelWatch(int cancel_fd, std::function<void()> on_cancel) {
    int p[2];
    if (cancel_fd < 0 || pipe2(p, O_CLOEXEC) != 0) return;
    stop_r_ = UniqueFd(p[0]);
    stop_w_ = UniqueFd(p[1]);
    thread_ = std::thread([cancel_fd, stop = stop_r_.get(), on_cancel = std::move(on_cancel)] {
      pollfd fds[2] = {{cancel_fd, POLLIN, 0}, {stop, POLLIN, 0}};
      while (poll(fds, 2, -1) < 0 && errno == EINTR) {
      }
      if ((fds[0].revents & POLLIN) && !(fds[1].revents & POLLIN)) on_cancel();
    });
  }
  ~CancelWatch() {
    if (!thread_.joinable()) return;
    (void)!write(stop_w_.get(), "x", 1);
    thread_.join();
  }
  CancelWatch(const CancelWatch&) = delete;
  CancelWatch& operator=(const CancelWatch&) = delete;

 private:
  UniqueFd stop_r_, stop_w_;
  std::thread thread_;
};

json Create(SessionManager& sessions, const json& args, McpCallError* error) {
  Answer a = sessions.Create(kMcpTenant, args);
  if (a.status / 100 != 2) return Refused(a, error);
  json body = a.body;
  std::string id = Str(body.value("id", json("")));
  json structured = {{"sessionId", id}, {"expiresAt", body.value("expiresAt", json())}};
  return Result(json::array({Text(absl::StrCat(
                    "session ", id, " is open (until ", Str(body.value("expiresAt", json(""))),
                    " at the latest). Pass {\"sessionId\": \"", id,
                    "\"} to run_python, run_command, read_file, write_file and list_files: "
                    "variables, imports and files stay between calls. close_session ends it."))}),
                structured, false);
}

json Close(SessionManager& sessions, const std::string& id, McpCallError* error) {
  Answer a = sessions.Delete(kMcpTenant, id);
  if (a.status / 100 != 2) return Refused(a, error);
  return Result(json::array({Text(absl::StrCat("session ", id, " is closed"))}), json(a.body),
                false);
}

json ForkSession(SessionManager& sessions, const std::string& id, const json& args,
                 McpCallError* error) {
  json request = json::object();
  if (args.contains("count")) request["count"] = args["count"];
  Answer a = sessions.Fork(kMcpTenant, id, request);
  if (a.status / 100 != 2) return Refused(a, error);
  json body = a.body;
  std::string text = absl::StrCat("forked session ", id, " into:");
  for (const json& s : body.value("sessions", json::array())) absl::StrAppend(&text, " ", Str(s));
  return Result(json::array({Text(text)}), body, false);
}

// files: written into the session before its cell runs.
bool WriteFiles(SessionManager& sessions, const std::string& id, const json& files, json* refusal,
                McpCallError* error) {
  if (!files.is_object()) return Invalid(error, "files must map paths to contents");
  if (files.size() > kMaxFiles) {
    return Invalid(error, absl::StrCat("more than ", kMaxFiles, " files"));
  }
  for (const auto& [path, v] : files.items()) {
    std::string bytes;
    if (!Content(v, &bytes)) {
      Fail(error, kInvalidParams,
           absl::StrCat("files[\"", path, "\"] must be text or {\"base64\": \"...\"}"));
      return false;
    }
    Answer a = sessions.WriteFile(kMcpTenant, id, path, bytes);
    if (a.status / 100 != 2) {
      *refusal = Refused(a, error);
      return false;
    }
  }
  return true;
}

// returnFiles: a block each (an image for an image), after the cell.
bool ReturnFiles(SessionManager& sessions, const std::string& id, const json& paths, json* blocks,
                 McpCallError* error) {
  if (!paths.is_array() || paths.size() > kMaxReturnFiles) {
    Fail(error, kInvalidParams,
         absl::StrCat("returnFiles must be a list of at most ", kMaxReturnFiles, " paths"));
    return false;
  }
  for (const json& p : paths) {
    if (!p.is_string()) return Invalid(error, "returnFiles holds paths");
    std::string path = p.get<std::string>();
    Answer a = sessions.ReadFile(kMcpTenant, id, path);
    if (a.status / 100 != 2) {
      blocks->push_back(Text(absl::StrCat("file ", path, ": ", Why(a))));
      continue;
    }
    bool truncated = a.bytes.size() > kMaxReturnFileBytes;
    if (truncated) a.bytes.resize(kMaxReturnFileBytes);
    blocks->push_back(FileBlock(path, a.bytes, truncated));
  }
  return true;
}

json Execute(SessionManager& sessions, const std::string& tool, const json& args, int cancel_fd,
             McpCallError* error) {
  const bool cell = tool == "run_python";
  if (std::string why = Unknown(
          tool, args, {cell ? "code" : "argv", "sessionId", "timeoutMs", "files", "returnFiles"});
      !why.empty()) {
    if (args.contains("stdin")) why += " (a session's programs read /dev/null)";
    return Fail(error, kInvalidParams, why);
  }
  std::string id = args["sessionId"].get<std::string>();
  json request = json::object();
  if (cell) {
    if (!args.contains("code")) return Fail(error, kInvalidParams, "run_python needs \"code\"");
    request["code"] = args["code"];
  } else {
    if (!args.contains("argv")) return Fail(error, kInvalidParams, "run_command needs \"argv\"");
    request["argv"] = args["argv"];
  }
  if (args.contains("timeoutMs")) request["timeoutMs"] = args["timeoutMs"];
  if (args.contains("files")) {
    json refusal;
    if (!WriteFiles(sessions, id, args["files"], &refusal, error)) return refusal;
  }
  Answer a;
  {
    CancelWatch watch(cancel_fd, [&] { sessions.Interrupt(kMcpTenant, id); });
    a = sessions.Execute(kMcpTenant, id, request,
                         cell ? SessionManager::Kind::kCell : SessionManager::Kind::kCommand,
                         nullptr);
  }
  if (a.status / 100 != 2) return Refused(a, error);
  json result = a.body;
  json content = CellContent(result);
  if (args.contains("returnFiles")) {
    json files = json::array();
    if (!ReturnFiles(sessions, id, args["returnFiles"], &files, error)) return nullptr;
    json status = content.back();
    content.erase(content.end() - 1);
    for (json& f : files) content.push_back(std::move(f));
    content.push_back(std::move(status));
  }
  bool failed = CellFailed(result);
  return Result(std::move(content), std::move(result), failed);
}

json ReadFile(SessionManager& sessions, const std::string& id, const json& args,
              McpCallError* error) {
  std::string path;
  if (!StringArg(args, "path", true, &path, error)) return nullptr;
  Answer a = sessions.ReadFile(kMcpTenant, id, path);
  if (a.status / 100 != 2) return Refused(a, error);
  size_t size = a.bytes.size();
  bool truncated = size > kMaxReadBytes;
  if (truncated) a.bytes.resize(kMaxReadBytes);
  return Result(json::array({FileBlock(path, a.bytes, truncated, /*labelled=*/false)}),
                {{"path", path}, {"size", size}, {"truncated", truncated}}, false);
}

json WriteFile(SessionManager& sessions, const std::string& id, const json& args,
               McpCallError* error) {
  std::string path, bytes;
  if (!StringArg(args, "path", true, &path, error)) return nullptr;
  bool text = args.contains("text"), b64 = args.contains("base64");
  if (text == b64) return Fail(error, kInvalidParams, "write_file needs \"text\" or \"base64\"");
  if (!Content(text ? args["text"] : json{{"base64", args["base64"]}}, &bytes)) {
    return Fail(error, kInvalidParams,
                text ? "\"text\" must be a string" : "\"base64\" must be base64 text");
  }
  Answer a = sessions.WriteFile(kMcpTenant, id, path, bytes);
  if (a.status / 100 != 2) return Refused(a, error);
  json body = a.body;
  return Result(json::array({Text(absl::StrCat("wrote ", bytes.size(), " bytes to ",
                                               Str(body.value("path", json(path)))))}),
                body, false);
}

json ListFiles(SessionManager& sessions, const std::string& id, const json& args,
               McpCallError* error) {
  std::string dir, glob;
  if (!StringArg(args, "dir", false, &dir, error) ||
      !StringArg(args, "glob", false, &glob, error)) {
    return nullptr;
  }
  auto r = args.find("recursive");
  if (r != args.end() && !r->is_boolean()) {
    return Fail(error, kInvalidParams, "\"recursive\" must be true or false");
  }
  Answer a = sessions.ListFiles(kMcpTenant, id, dir, r != args.end() && r->get<bool>(), glob);
  if (a.status / 100 != 2) return Refused(a, error);
  json body = a.body;
  std::string text = absl::StrCat(Str(body.value("dir", json(""))), ":\n");
  size_t n = 0;
  for (const json& e : body.value("entries", json::array())) {
    if (++n > kMaxListedLines) {
      absl::StrAppend(&text, "[... ", body["entries"].size() - kMaxListedLines, " more]\n");
      break;
    }
    std::string type = Str(e.value("type", json("")));
    absl::StrAppend(&text, Str(e.value("path", json(""))), type == "dir" ? "/" : "",
                    type == "file" ? absl::StrCat("  ", Str(e.value("size", json()))) : "", "\n");
  }
  if (body.value("truncated", false)) text += "[the listing is truncated]\n";
  return Result(json::array({Text(Clip(text, kMaxStreamText))}), body, false);
}

}  // namespace

bool IsSessionCall(const std::string& tool, const json& args) {
  if (tool == "create_session" || tool == "close_session" || tool == "fork_session" ||
      tool == "read_file" || tool == "write_file" || tool == "list_files") {
    return true;
  }
  return (tool == "run_python" || tool == "run_command") && args.is_object() &&
         args.contains("sessionId");
}

json CallSessionTool(SessionManager& sessions, const std::string& tool, const json& args,
                     int cancel_fd, McpCallError* error) {
  if (!args.is_object()) return Fail(error, kInvalidParams, "arguments must be an object");
  if (tool == "create_session") return Create(sessions, args, error);
  std::string id;
  if (!StringArg(args, "sessionId", true, &id, error)) return nullptr;
  if (tool == "run_python" || tool == "run_command") {
    return Execute(sessions, tool, args, cancel_fd, error);
  }
  std::set<std::string> known = {"sessionId"};
  if (tool == "read_file") known.insert("path");
  if (tool == "write_file") known.insert({"path", "text", "base64"});
  if (tool == "list_files") known.insert({"dir", "recursive", "glob"});
  if (tool == "fork_session") known.insert("count");
  if (std::string why = Unknown(tool, args, known); !why.empty()) {
    return Fail(error, kInvalidParams, why);
  }
  if (tool == "close_session") return Close(sessions, id, error);
  if (tool == "fork_session") return ForkSession(sessions, id, args, error);
  if (tool == "read_file") return ReadFile(sessions, id, args, error);
  if (tool == "write_file") return WriteFile(sessions, id, args, error);
  return ListFiles(sessions, id, args, error);
}

}  // namespace sentry::agent
