// Session: one user's long-lived sandbox and the kernel in it (issue 25).
//
// A Session owns one sandbox (sandbox_launcher.h) whose program is the
// session kernel, and one reader thread that reads the kernel's frames
// (frames.h), the supervisor's messages and its last --log line. It runs one
// cell or command at a time (a second is refused: kBusy), serves file
// requests while a cell runs, and ends exactly once, with a reason: the
// server's (idle, lifetime, deleted, shutdown, timeout) or the sandbox's own
// (memory: the cgroup's limit killed the kernel; crashed: it died otherwise,
// or sent a bad frame). Every call after the end answers kEnded, and
// ended() says why and when.
//
// A cell past its timeout is interrupted (KeyboardInterrupt, state kept);
// only if the kernel does not finish it within the grace is the session
// ended, "timeout". Nothing of a session outlives it: End kills the
// supervisor (SIGTERM, as `sentry run` is ended, again until it is gone),
// and the supervisor takes down the guest's processes, cgroup, store and
// sockets before it exits; WaitGone waits for that.
//
// Thread-safe: every method may be called from any thread.
#ifndef SENTRY_SESSION_SESSION_H_
#define SENTRY_SESSION_SESSION_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "sentry/session/cell_record.h"
#include "sentry/session/frames.h"
#include "sentry/session/sandbox_launcher.h"

namespace sentry::session {

// Why a session ended; as the API says it ("idle", "lifetime", ...).
enum class EndReason { kNone, kIdle, kLifetime, kMemory, kCrashed, kDeleted, kShutdown, kTimeout };
const char* ReasonName(EndReason reason);

struct Ended {
  EndReason reason = EndReason::kNone;
  int64_t at_unix_ms = 0;
  std::string detail;  // for crashed: the exit status, the supervisor's last message
  // {"reason": ..., "at": "2026-12-03T13:05:00.123Z", "detail": ...}
  nlohmann::ordered_json Json() const;
};

// What a session may do and hold, fixed when it is claimed.
struct SessionTerms {
  std::string id;
  std::string tenant;
  double idle_timeout_sec = 600;
  double max_lifetime_sec = 3600;
  uint64_t max_output = 64 << 10;  // per stream, per cell
  double cell_timeout_sec = 30;    // when a cell names none
  double max_cell_timeout_sec = 30;
  double interrupt_grace_sec = 2;  // after a timeout's interrupt, before the end
  nlohmann::ordered_json limits;   // as the --log line shows them (LimitsJson)
};

enum class Status {
  kOk,
  kBusy,     // a cell or command is running (409)
  kEnded,    // the session has ended (410; ended() says why)
  kTimeout,  // a file request the kernel did not answer in time (504)
};

class Session final {
 public:
  // Starts the sandbox and the reader thread; the kernel is ready once
  // WaitReady says so. max_output etc. come with Claim.
  static absl::StatusOr<std::shared_ptr<Session>> Launch(SandboxLauncher& launcher,
                                                         const SandboxSpec& spec);
  ~Session();  // ends the session (shutdown) if it has not ended, and waits for it
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Waits for the kernel's "ready" frame; false (with *why) if the sandbox
  // died first or timeout_sec passed (the session is then ended, crashed).
  bool WaitReady(double timeout_sec, std::string* why);
  // Gives a ready session its id, owner and terms (a spare is made before
  // anyone asks); its lifetime starts now.
  void Claim(const SessionTerms& terms);

  // Called with each stream chunk of a running cell, on the caller's thread.
  using LiveFn = std::function<void(std::string_view name, std::string_view text)>;

  // Runs a cell ({"op":"cell","code":...}) or a command ({"op":"command",
  // "argv":[...]} or "bash") and waits for its end: *result is the cell's
  // result object (cell_record.h) with "sessionId", and "sessionEnded"
  // ({reason, at}) if the session ended during it. timeout_sec <= 0: the
  // terms' default; it is capped at the terms' maximum.
  Status Execute(nlohmann::json op, double timeout_sec, const LiveFn& live,
                 nlohmann::ordered_json* result);
  // Interrupts the running cell or command (nothing when idle).
  Status Interrupt();
  // A file request (read_file, write_file, list_files; SESSIONS.md), answered
  // even while a cell runs: *reply is the kernel's frame (file, files,
  // file_error), checked to be an object with that op.
  Status FileOp(nlohmann::json op, double timeout_sec, nlohmann::json* reply);

  // A fork (FORK.md; session_fork.cc): grants `handoffs.size()` forks on the
  // supervisor's control socket (fork_prepare, the i-th socket the i-th
  // child's hand-off to its own supervisor, already started), asks the
  // kernel to fork, and waits for its `done` and the supervisor's end of the
  // re-listen. kBusy while a cell, a command or another fork runs; else OK
  // with *children (pids as the sandbox names them) or an error in *why
  // (the fork refused, withdrawn, or the session ended by it).
  Status Fork(const std::vector<int>& handoffs, double timeout_sec, std::vector<int64_t>* children,
              std::string* why);

  // Ends the session with reason (the first reason wins) and starts the
  // sandbox's teardown; returns at once.
  void End(EndReason reason);
  // Ends the session for its callers (reason, as End) but keeps its sandbox
  // running: a forked session's kernel lives in a pid namespace nested in
  // its parent's, so the parent's kernel must outlive it. The next End (any
  // reason) stops the sandbox.
  void EndKeepingSandbox(EndReason reason);

  // Waits until the sandbox is gone (its supervisor exited, having removed
  // its processes, cgroup and files); false if timeout_sec passed first.
  bool WaitGone(double timeout_sec);

  // The idle or lifetime reason if the session is past one of them now.
  EndReason Expired(std::chrono::steady_clock::time_point now) const;

  std::optional<Ended> ended() const;
  bool gone() const;
  const std::string& id() const { return terms_.id; }
  const std::string& tenant() const { return terms_.tenant; }
  const SessionTerms& terms() const { return terms_; }
  pid_t supervisor_pid() const { return supervisor_pid_; }
  // What the sandbox was started with (a fork's children get the same).
  const SandboxSpec& spec() const { return spec_; }
  // For GET /v1/sessions: id, state, ageMs, idleMs, memoryBytes, cells, expiresAt.
  nlohmann::ordered_json Info() const;
  // The ISO 8601 time at which the lifetime ends.
  std::string ExpiresAt() const;

 private:
  explicit Session(SandboxProcess process);
  void ReadLoop();
  void OnFrame(const nlohmann::json& frame);  // with mu_ held
  void EndLocked(EndReason reason, std::string detail);
  bool Send(const nlohmann::json& op);  // without mu_ held
  void Concluded();                     // the supervisor is gone: why, if nobody said
  // The control socket's next message (a reply or an event), waited for at
  // most until deadline; false with *why if none came.
  bool ReadControl(std::chrono::steady_clock::time_point deadline, uint32_t kind, uint64_t id,
                   int* status, std::string* reason, std::string* why, uint32_t* handed = nullptr);

  SandboxProcess process_;
  SandboxSpec spec_;
  int64_t kernel_pid_ = 0;     // the kernel's pid as the sandbox names it (its ready frame)
  bool forking_ = false;       // a fork is under way (as busy as a cell)
  bool sandbox_kept_ = false;  // ended, its sandbox kept (EndKeepingSandbox)
  uint64_t fork_id_ = 0;       // its request id, while its done is awaited
  std::optional<nlohmann::json> fork_done_;
  pid_t supervisor_pid_ = -1;
  SessionTerms terms_;
  std::chrono::steady_clock::time_point claimed_, last_used_;
  int64_t claimed_unix_ms_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::mutex send_mu_;
  bool ready_ = false;
  bool gone_ = false;
  std::optional<Ended> ended_;
  uint64_t next_id_ = 1;
  uint64_t cells_ = 0;
  std::unique_ptr<CellRecord> cell_;                         // the running cell or command
  std::map<uint64_t, std::optional<nlohmann::json>> files_;  // file requests waiting
  std::string messages_;                                     // the supervisor's last stderr bytes
  std::string log_line_;                                     // its --log line
  std::thread reader_;
};

// Milliseconds since the epoch as ISO 8601 UTC ("2026-12-03T13:05:00.123Z").
std::string IsoTime(int64_t unix_ms);
int64_t NowUnixMs();

}  // namespace sentry::session

#endif  // SENTRY_SESSION_SESSION_H_
