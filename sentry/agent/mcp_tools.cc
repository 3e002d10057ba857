// The two tools of `sentry mcp`, as tools/list describes them.
#include "nlohmann/json.hpp"
#include "sentry/agent/mcp_server.h"

namespace sentry::agent {
namespace {

using nlohmann::json;

json FilesSchema() {
  json text = {{"type", "string"}};
  json bytes = {{"type", "object"},
                {"properties", {{"base64", {{"type", "string"}}}}},
                {"required", {"base64"}}};
  json any = {{"anyOf", json::array({text, bytes})}};
  return {{"type", "object"},
          {"description",
           "Files placed in the sandbox before the run: guest path (absolute, or relative to "
           "the home /home/sandbox, the working directory) to its text, or to "
           "{\"base64\": \"...\"} for bytes."},
          {"additionalProperties", any}};
}

json CommonProperties() {
  return {{"stdin", {{"type", "string"}, {"description", "Text given to the program's stdin."}}},
          {"files", FilesSchema()},
          {"returnFiles",
           {{"type", "array"},
            {"items", {{"type", "string"}}},
            {"description",
             "Guest files to return after the run: paths (relative to the working directory), "
             "directories (all they hold) or patterns such as \"out/*.csv\". Text files come "
             "back as text, images as images, other bytes as base64 resources."}}},
          {"timeoutMs",
           {{"type", "integer"},
            {"minimum", 1},
            {"description", "Wall-clock cap in milliseconds (at most the server's)."}}}};
}

// A run's result (`sentry run --json`), or a session cell's (its
// executionCount, results, an error object, a null exitCode for a cell).
json OutputSchema() {
  // No type array (["string", "null"]): not every client takes one (the
  // MCP Inspector warns); a value that may be null is described instead.
  json nullable_string = {{"description", "a string, or null"}};
  return {{"type", "object"},
          {"properties",
           {{"stdout", {{"type", "string"}}},
            {"stderr", {{"type", "string"}}},
            {"exitCode", {{"description", "an integer, or null (a cell, a signal)"}}},
            {"signal", nullable_string},
            {"timedOut", {{"type", "boolean"}}},
            {"limit", nullable_string},
            {"durationMs", {{"type", "number"}}},
            {"cpuMs", {{"type", "integer"}}},
            {"sentryCpuMs", {{"type", "integer"}}},
            {"sentryThrottledMs", {{"type", "integer"}}},
            {"peakMemoryBytes", {{"type", "integer"}}},
            {"stdoutDroppedBytes", {{"type", "integer"}}},
            {"stderrDroppedBytes", {{"type", "integer"}}},
            {"walls", {{"type", "array"}, {"items", {{"type", "string"}}}}},
            {"denied",
             {{"type", "array"},
              {"items",
               {{"type", "object"},
                {"properties",
                 {{"syscall", {{"type", "string"}}},
                  {"argument", {{"type", "string"}}},
                  {"error", {{"type", "string"}}},
                  {"hint", {{"type", "string"}}}}}}}}},
            {"network",
             {{"type", "object"},
              {"properties",
               {{"connections", {{"type", "integer"}}},
                {"bytesOut", {{"type", "integer"}}},
                {"bytesIn", {{"type", "integer"}}}}}}},
            {"notices", {{"type", "array"}, {"items", {{"type", "string"}}}}},
            {"error",
             {{"description", "null, a string (a run), or {name, value, traceback} (a cell)"}}},
            {"executionCount", {{"type", "integer"}}},
            {"results",
             {{"type", "array"},
              {"description",
               "a session cell's MIME bundles: {\"text/plain\": ..., "
               "\"image/png\": base64, ...}"},
              {"items", {{"type", "object"}}}}},
            {"sessionId", {{"type", "string"}}},
            {"files",
             {{"type", "object"},
              {"description", "returnFiles: path -> {size, truncated, text | base64} or {error}"}}},
            {"version", {{"type", "string"}}}}},
          {"required", {"stdout", "stderr", "exitCode", "timedOut", "limit", "error"}}};
}

}  // namespace

json McpTools() {
  json py = CommonProperties();
  py["code"] = {{"type", "string"}, {"description", "Python 3 source, run as the script main.py."}};
  json cmd = CommonProperties();
  cmd["argv"] = {{"type", "array"},
                 {"items", {{"type", "string"}}},
                 {"minItems", 1},
                 {"description", "The program and its arguments, e.g. [\"ls\", \"-l\"]."}};
  const char* where =
      " in a fresh sandbox (no network unless the server allows it, nothing of the host "
      "writable, nothing kept after the run). Returns stdout, stderr, the exit code and what "
      "the sandbox refused.";
  return json::array(
      {{{"name", "run_python"},
        {"title", "Run Python"},
        {"description", std::string("Runs Python 3 code as a script") + where},
        {"inputSchema",
         {{"type", "object"},
          {"properties", py},
          {"required", {"code"}},
          {"additionalProperties", false}}},
        {"outputSchema", OutputSchema()}},
       {{"name", "run_command"},
        {"title", "Run a command"},
        {"description", std::string("Runs a program (bash, ls, python3...)") + where},
        {"inputSchema",
         {{"type", "object"},
          {"properties", cmd},
          {"required", {"argv"}},
          {"additionalProperties", false}}},
        {"outputSchema", OutputSchema()}}});
}

}  // namespace sentry::agent
