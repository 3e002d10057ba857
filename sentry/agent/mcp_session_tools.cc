// The session tools as tools/list describes them (mcp_sessions.h).
#include "nlohmann/json.hpp"
#include "sentry/agent/mcp_sessions.h"

namespace sentry::agent {
namespace {

using nlohmann::json;

json SessionId() {
  return {{"type", "string"},
          {"description", "The session (from create_session) whose state and files to use."}};
}

json Tool(const char* name, const char* title, const char* description, json properties,
          json required) {
  return {{"name", name},
          {"title", title},
          {"description", description},
          {"inputSchema",
           {{"type", "object"},
            {"properties", std::move(properties)},
            {"required", std::move(required)},
            {"additionalProperties", false}}}};
}

}  // namespace

void AddSessionTools(json* tools) {
  for (json& t : *tools) {
    if (t["name"] == "run_python" || t["name"] == "run_command") {
      json& props = t["inputSchema"]["properties"];
      props["sessionId"] = SessionId();
      props["sessionId"]["description"] =
          "Run in this session (create_session) instead of a fresh sandbox: its Python "
          "globals, imports and files stay between calls, and the value of the code's last "
          "expression, display() and matplotlib figures come back (images as image content). "
          "stdin is not taken then.";
    }
  }
  json limits = {{"type", "object"},
                 {"description",
                  "Caps, at most the server's: timeoutMs (each call's default), memoryMb, "
                  "maxProcesses, cpus, diskMb, maxOutputBytes, nofile."}};
  json files = {{"type", "object"},
                {"description",
                 "Files placed in the session at its start: path to text, or to "
                 "{\"base64\": \"...\"}."}};
  tools->push_back(Tool(
      "create_session", "Create a session",
      "Opens a sandbox that lives across calls (a notebook's kernel): pass its sessionId to "
      "run_python, run_command and the file tools. It ends when idle too long, at its maximum "
      "lifetime, or at close_session.",
      {{"limits", limits},
       {"network",
        {{"description", "\"none\", or {\"allow\": [\"host:port\", ...]} within the server's"}}},
       {"files", files},
       {"idleTimeoutMs", {{"type", "integer"}, {"minimum", 1}}},
       {"maxLifetimeMs", {{"type", "integer"}, {"minimum", 1}}}},
      json::array()));
  tools->push_back(Tool("close_session", "Close a session",
                        "Ends a session: its processes, files and memory are gone.",
                        {{"sessionId", SessionId()}}, {"sessionId"}));
  tools->push_back(
      Tool("fork_session", "Fork a session",
           "Copies a session between calls into count new sessions (1-100, default 1): each "
           "starts with its Python state, files, cwd and environment, then goes its own way "
           "(new random seeds; writes unseen by the others). Returns their sessionIds; each "
           "counts as a session of its own.",
           {{"sessionId", SessionId()},
            {"count", {{"type", "integer"}, {"minimum", 1}, {"maximum", 100}}}},
           {"sessionId"}));
  tools->push_back(
      Tool("read_file", "Read a file of a session",
           "A file of the session (relative paths are under its home, /home/sandbox): an image "
           "comes back as image content, text as text.",
           {{"sessionId", SessionId()}, {"path", {{"type", "string"}}}}, {"sessionId", "path"}));
  tools->push_back(Tool("write_file", "Write a file into a session",
                        "Writes a file (parent directories are made): give text, or base64 "
                        "for bytes.",
                        {{"sessionId", SessionId()},
                         {"path", {{"type", "string"}}},
                         {"text", {{"type", "string"}}},
                         {"base64", {{"type", "string"}}}},
                        {"sessionId", "path"}));
  tools->push_back(
      Tool("list_files", "List a session's files",
           "The entries of a directory of the session (default: its home) with their types and "
           "sizes; recursive on request; glob filters them (\"*.png\", \"out/**/*.csv\" with "
           "recursive).",
           {{"sessionId", SessionId()},
            {"dir", {{"type", "string"}}},
            {"recursive", {{"type", "boolean"}}},
            {"glob", {{"type", "string"}}}},
           {"sessionId"}));
}

}  // namespace sentry::agent
