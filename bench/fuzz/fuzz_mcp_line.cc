// libFuzzer target: `sentry mcp`'s input (sentry/agent/mcp_server.cc), the
// JSON-RPC lines a client (a model, through its tool arguments) sends.
//
// The bytes are a stream of lines. Each line is answered by HandleLine, and
// the whole stream is served by McpServer::Serve from a memfd (line
// splitting, overlong lines, tools/call on threads, notifications/cancelled),
// against the real AgentService over a runner that runs nothing
// (fuzz_agent_fake.h). Checked beyond "no crash" (and no stack overflow on
// deep nesting):
//  - every answer is one line: valid JSON, an object with "jsonrpc": "2.0",
//    an "id" that is null, a string or an integer, and exactly one of
//    "result" and "error" (with an integer code and a string message);
//  - Serve writes only such lines, each ending in a newline.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_agent_fake.h"
#include "nlohmann/json.hpp"
#include "sentry/agent/mcp_server.h"

namespace {

using nlohmann::json;

[[noreturn]] void Fail(const char* what, std::string_view in, std::string_view out) {
  std::fprintf(stderr, "fuzz_mcp_line invariant broken: %s\nin: %.*s\nout: %.*s\n", what,
               static_cast<int>(std::min<size_t>(in.size(), 2000)), in.data(),
               static_cast<int>(std::min<size_t>(out.size(), 2000)), out.data());
  std::abort();
}

void CheckAnswer(std::string_view in, const std::string& line) {
  if (line.find('\n') != std::string::npos) Fail("a newline inside an answer", in, line);
  json a = json::parse(line, nullptr, false);
  if (a.is_discarded() || !a.is_object()) Fail("an answer that is not a JSON object", in, line);
  if (a.value("jsonrpc", "") != "2.0") Fail("no jsonrpc 2.0", in, line);
  if (!a.contains("id")) Fail("no id", in, line);
  const json& id = a["id"];
  if (!id.is_null() && !id.is_string() && !id.is_number_integer()) Fail("id type", in, line);
  if (a.contains("result") == a.contains("error")) Fail("not one of result and error", in, line);
  if (a.contains("error")) {
    const json& e = a["error"];
    if (!e.is_object() || !e.contains("code") || !e["code"].is_number_integer() ||
        !e.contains("message") || !e["message"].is_string()) {
      Fail("error shape", in, line);
    }
  }
}

std::string ReadBack(int fd) {
  std::string out;
  char buf[1 << 14];
  off_t at = 0;
  for (ssize_t n; (n = pread(fd, buf, sizeof(buf), at)) > 0; at += n) out.append(buf, n);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  sentry::agent::McpServer server(fuzz_agent::Service());
  size_t start = 0;
  while (start <= in.size()) {
    size_t nl = in.find('\n', start);
    std::string line(
        in.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    if (!line.empty()) {
      if (auto answer = server.HandleLine(line)) CheckAnswer(line, *answer);
    }
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  int in_fd = memfd_create("fuzz-in", MFD_CLOEXEC);
  int out_fd = memfd_create("fuzz-out", MFD_CLOEXEC);
  if (in_fd < 0 || out_fd < 0) std::abort();
  if (size > 0 && write(in_fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  lseek(in_fd, 0, SEEK_SET);
  server.Serve(in_fd, out_fd);
  std::string out = ReadBack(out_fd);
  close(in_fd);
  close(out_fd);
  if (!out.empty() && out.back() != '\n') Fail("Serve's output does not end a line", in, out);
  for (size_t at = 0; at < out.size();) {
    size_t nl = out.find('\n', at);
    CheckAnswer(in, out.substr(at, nl - at));
    at = nl + 1;
  }
  return 0;
}
