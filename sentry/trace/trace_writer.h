// TraceWriter: where --trace's lines go, in strace -f's layout.
//
// Lines come from three threads (the notification loop, the ptrace thread,
// late answers), each written whole under one mutex. The prefix is strace's:
// to a terminal or stderr, "[pid N] " once the sandbox has more than one task;
// to a --trace-file, "N " on every line (strace -f -o). N is the guest's own
// tid, as the sandbox's pid namespace numbers it. " = result" is aligned to
// column 40 as strace does. Optional timestamps as strace -t, -tt, -ttt.
#ifndef SENTRY_TRACE_TRACE_WRITER_H_
#define SENTRY_TRACE_TRACE_WRITER_H_

#include <sys/types.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "sentry/base/log.h"
#include "sentry/trace/syscall_format.h"

namespace sentry::trace {

enum class Timestamps {
  kNone,
  kSeconds,  // 12:04:31 (strace -t)
  kMicros,   // 12:04:31.123456 (strace -tt)
  kUnix,     // 1764676271.123456 (strace -ttt)
};

// "", "s", "us", "unix" (and strace's own "t", "tt", "ttt"); nullopt if none.
std::optional<Timestamps> ParseTimestamps(const std::string& s);

class TraceWriter final {
 public:
  // To stderr (not closed).
  explicit TraceWriter(FILE* out, Timestamps ts = Timestamps::kNone)
      : out_(out), lines_(out), ts_(ts) {}
  // To a file, created or truncated, mode 0600.
  static absl::StatusOr<std::shared_ptr<TraceWriter>> OpenFile(const std::string& path,
                                                               Timestamps ts);
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  ~TraceWriter();

  // One call of any source (a trapped call, a census's native call): formatted
  // (see syscall_format.h; mem may be null) and written.
  void Syscall(pid_t tid, const TracedCall& call, GuestMemory* mem);
  // "openat(AT_FDCWD, \"x\", O_RDONLY)" and "3": one finished call.
  void Call(pid_t tid, const std::string& call, const std::string& ret);
  // A call answered later: "connect(3, {...}, 16 <unfinished ...>", then
  // "<... connect resumed>) = 0".
  void Unfinished(pid_t tid, const std::string& name, const std::string& args);
  void Resumed(pid_t tid, const std::string& name, const std::string& ret);
  // "+++ exited with 0 +++", "--- SIGCHLD {...} ---".
  void Event(pid_t tid, const std::string& text);
  // The live task count, which decides the stderr prefix.
  void TaskStarted();
  void TaskEnded();

 private:
  TraceWriter(FILE* out, Timestamps ts, bool owned)
      : out_(out), lines_(out), ts_(ts), owned_(owned) {}
  std::string Leader(pid_t tid) const;
  void Write(std::string line);

  std::mutex mu_;
  FILE* out_;
  log::LineLog lines_;  // spdlog's logger of the trace, on out_
  Timestamps ts_;
  bool owned_ = false;  // a --trace-file: closed here, and every line prefixed
  int tasks_ = 1;
};

}  // namespace sentry::trace

#endif  // SENTRY_TRACE_TRACE_WRITER_H_
