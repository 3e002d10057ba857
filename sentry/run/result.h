// RunResult: what one run returns, and its JSON form (the --json object and the
// --log line). Field names are stable; the README documents the schema.
#ifndef SENTRY_RUN_RESULT_H_
#define SENTRY_RUN_RESULT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sentry {

struct Denial;       // sentry/kernel/kernel.h
struct DenialPlace;  // sentry/run/denial_hint.h

struct DeniedOperation {
  std::string syscall;
  std::string argument;  // a path or an address
  std::string error;     // "EACCES"
  std::string hint;      // one line for the model
};

// A guest file read back after the run (RunOptions::return_files).
struct ReturnedFile {
  std::string path;
  std::string data;   // its first bytes, at most the cap
  uint64_t size = 0;  // its whole size
  std::string error;  // why it was not read ("" if it was)
};

// What one --copy-out did (the result's "copyOut").
struct CopyOutReport {
  std::string from, to;  // the guest name as asked, the host directory
  uint64_t files = 0, bytes = 0;
  std::vector<std::string> skipped;  // "KEY: why", for what was left out
  std::string error;                 // why it stopped ("" if it did not)
};

// One call of a host tool (--tool), as "toolCalls" lists it.
struct ToolCall {
  std::string name;  // as the guest named it (at most 64 bytes)
  uint64_t arg_bytes = 0, result_bytes = 0, ms = 0;
  std::string error;  // "" when the tool answered a value
};

struct RunResult {
  std::string stdout_text, stderr_text;
  uint64_t stdout_dropped = 0, stderr_dropped = 0;
  int exit_code = 0;                  // the guest's, or 128+signal
  std::optional<std::string> signal;  // "SIGKILL"
  bool timed_out = false;
  std::optional<std::string> limit;  // "timeout", "memory", "pids", "network"
  std::optional<std::string> error;  // sentry's own failure, if any
  uint64_t duration_ms = 0;
  uint64_t cpu_ms = 0;
  // The sentry's own CPU on the guest's trapped calls, and how long those
  // calls waited because it passed its bound (kernel/cpu_share.h).
  uint64_t sentry_cpu_ms = 0;
  uint64_t sentry_throttled_ms = 0;
  uint64_t peak_memory_bytes = 0;
  std::vector<std::string> walls;  // "seccomp", "namespaces", "cgroup-memory"...
  // Which mechanism holds each limit the run has ("memory" -> "cgroup",
  // "rlimit-as"...): never one that is not enforced.
  std::vector<std::pair<std::string, std::string>> limits;
  std::vector<DeniedOperation> denied;
  // Connections out of the sandbox (--allow-net), and their bytes.
  uint64_t net_connections = 0, net_bytes_out = 0, net_bytes_in = 0;
  // Only when the run asked for files back: "files" in the JSON.
  std::optional<std::vector<ReturnedFile>> files;
  // Why the list of files ended early (a cap), as "filesLimit".
  std::string files_limit;
  // --copy-out: one line per name, what was written or why not.
  std::vector<CopyOutReport> copy_out;
  // Only when tools were registered: "toolCalls" in the JSON.
  std::optional<std::vector<ToolCall>> tool_calls;
  // Every notice sentry printed on stderr for this run (log::Notice): "notices".
  std::vector<std::string> notices;
};

std::string ResultJson(const RunResult& r);

// sentry's release ("0.1.0"), as the result and `sentry --version` give it.
const char* SentryVersion();

// The end of a run as its caller reads it: with json, the result object on
// stdout; else, where sentry ended the run, one line on stderr saying why.
void PrintOutcome(const RunResult& r, bool json, double timeout_sec);

// "SIGKILL" for 9.
std::string SignalName(int sig);
// A denial as the model reads it: what was refused and what to do instead
// (a file's refusal explained by where it is: place's mounts, cwd, home).
DeniedOperation ExplainDenial(const Denial& d, const DenialPlace& place);

}  // namespace sentry

#endif  // SENTRY_RUN_RESULT_H_
