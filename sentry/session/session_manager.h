// SessionManager: the sessions of one `sentry serve` (or `sentry mcp`):
// their making (from a few spares started ahead), their owners and caps,
// their ends (idle, lifetime: a reaper thread), the bounded record of ended
// ids that lets a late call answer 410 with the reason, and the --log line
// of each cell. The HTTP routes (agent/session_routes.h) and the MCP tools
// are thin layers over these calls: each takes the caller's tenant (the
// name of its token) and a request object, and answers an HTTP status with
// a JSON body, so both protocols say the same things.
//
//   Create(tenant, {limits, network, files, idleTimeoutMs, maxLifetimeMs})
//       -> 201 {id, expiresAt}
//   Execute(tenant, id, {code, timeoutMs} | {argv} | {bash}, kind, live)
//       -> 200 the cell's result (cell_record.h), 409 busy
//   Interrupt(tenant, id) -> 200 {interrupted}
//   ReadFile / WriteFile / ListFiles (tenant, id, path | dir, ...)
//   Fork(tenant, id, {count}) -> 201 {sessions: [ids]} (FORK.md; 409 while a
//       cell runs, 429 past a cap: refused whole)
//   Delete(tenant, id) -> 200 {id, ended}
//   List(tenant) -> 200 {sessions: [...]}; Get(tenant, id) -> 200 one of them
//
// A session another tenant made is 404 for this one, exactly as an id never
// made; an ended one is 410 {"error": {"reason", "at"}} to its owner, for as
// long as the record keeps it (the last kEndedKept ids).
#ifndef SENTRY_SESSION_SESSION_MANAGER_H_
#define SENTRY_SESSION_SESSION_MANAGER_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"
#include "sentry/agent/run_request.h"
#include "sentry/session/fork_spares.h"
#include "sentry/session/sandbox_launcher.h"
#include "sentry/session/session.h"

namespace sentry::session {

struct ManagerOptions {
  agent::ServerPolicy policy;  // the server's limits: a session's ceiling
  // The kernel's command line, e.g. {"python3", "-c", SOURCE, "--preload", "numpy"}.
  std::vector<std::string> kernel_argv;
  std::string log_path;  // --log: one line per cell
  int spares = 1;        // sessions kept started ahead (0: each made on demand)
  // Fork children's supervisors kept started ahead, once a fork was asked
  // (fork_spares.h; 0: each started with its fork).
  int fork_spares = 2;
  int max_sessions = 64;
  int max_sessions_per_tenant = 16;
  double idle_timeout_sec = 600;   // the default, and a request's ceiling:
  double max_lifetime_sec = 3600;  // a request may only shorten them
  double interrupt_grace_sec = 2;
  double ready_timeout_sec = 60;  // a kernel that does not start in this is crashed
};

struct Answer {
  int status = 200;
  nlohmann::ordered_json body;
  std::string bytes;  // a file's content (GET .../files?path=), when raw
  bool raw = false;
};

// An error answer: {"error": {"message", "field"?}} with an HTTP status.
Answer ErrorAnswer(int status, const std::string& message, const std::string& field = "");

// How long a file request waits for the session's kernel.
inline constexpr double kFileTimeoutSec = 30;

class SessionManager final {
 public:
  // Takes a launcher started while the process had one thread.
  SessionManager(ManagerOptions options, std::unique_ptr<SandboxLauncher> launcher);
  ~SessionManager();  // Shutdown()
  SessionManager(const SessionManager&) = delete;
  SessionManager& operator=(const SessionManager&) = delete;

  // Starts the reaper and the spares' refill (threads).
  void Start();
  // Ends every session ("shutdown") and the spares, and waits until their
  // sandboxes are gone. Later calls answer 503.
  void Shutdown();

  Answer Create(const std::string& tenant, const nlohmann::json& request);
  enum class Kind { kCell, kCommand };
  Answer Execute(const std::string& tenant, const std::string& id, const nlohmann::json& request,
                 Kind kind, const Session::LiveFn& live);
  Answer Interrupt(const std::string& tenant, const std::string& id);
  Answer ReadFile(const std::string& tenant, const std::string& id, const std::string& path);
  Answer WriteFile(const std::string& tenant, const std::string& id, const std::string& path,
                   const std::string& bytes);
  // glob: "" for all; matched against the path relative to dir (fnmatch).
  Answer ListFiles(const std::string& tenant, const std::string& id, const std::string& dir,
                   bool recursive, const std::string& glob);
  // N copies of a session between cells (session_manager_fork.cc): each a
  // new session of the same tenant with the parent's limits and terms, its
  // own id and clocks. Any failure leaves no child and the parent usable.
  Answer Fork(const std::string& tenant, const std::string& id, const nlohmann::json& request);
  Answer Delete(const std::string& tenant, const std::string& id);
  Answer List(const std::string& tenant);
  // One session's entry of List.
  Answer Get(const std::string& tenant, const std::string& id);

  // The session itself, for a caller that needs more (nullptr and *refusal
  // set, 404 or 410, if the tenant has no live session of that id).
  std::shared_ptr<Session> Find(const std::string& tenant, const std::string& id, Answer* refusal);

  // For /metrics and tests: live sessions, spares ready, fork spares ready.
  size_t live() const;
  size_t spares_ready() const;
  size_t fork_spares_ready() const;
  // Prometheus text: sentry_sessions_open, sentry_session_spares_ready,
  // sentry_session_fork_spares_ready,
  // sentry_sessions_ended_total{reason}, sentry_session_cells_total.
  std::string MetricsText() const;

 private:
  struct EndedRecord {
    std::string tenant;
    Ended ended;
  };
  void Reap();
  void Refill();
  std::shared_ptr<Session> TakeSpare();
  SandboxSpec SpecFor(const RunOptions& o, bool network_none,
                      const std::vector<std::string>& allow) const;
  void Retire(const std::shared_ptr<Session>& s);  // with mu_ held
  Answer EndedAnswer(const Ended& e) const;
  int ReservedFor(const std::string& tenant) const;  // with mu_ held
  // Whether sessions forked from s are still running (with mu_ held).
  bool HasLiveChildren(const Session* s) const;
  // Ends s (reason), or, while sessions forked from it run, ends it for its
  // callers and keeps its sandbox in lingering_ (with mu_ held).
  void EndOrLinger(const std::shared_ptr<Session>& s, EndReason reason);
  void LogCell(const Session& s, const nlohmann::json& op, const nlohmann::ordered_json& result);

  const ManagerOptions options_;
  std::unique_ptr<SandboxLauncher> launcher_;
  std::unique_ptr<ForkSpares> fork_spares_;  // (uses launcher_: declared after it)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<Session>> live_;
  std::deque<std::shared_ptr<Session>> spares_;
  int spares_starting_ = 0;
  std::map<std::string, EndedRecord> ended_;
  std::deque<std::string> ended_order_;
  std::thread reaper_, refill_;
  std::atomic<uint64_t> logged_{0};
  std::atomic<uint64_t> cells_{0};
  std::map<std::string, uint64_t> ended_by_reason_;
  // Sessions a fork under way will make, counted against the caps meanwhile.
  std::map<std::string, int> reserved_;
  int reserved_total_ = 0;
  // A parent's forked sessions: their kernels' pid namespaces nest in the
  // parent's, so its sandbox is kept (lingering_) until they have ended.
  std::map<const Session*, std::vector<std::weak_ptr<Session>>> children_of_;
  std::vector<std::shared_ptr<Session>> lingering_;
};

// A new session id ("ses_" + 24 hex digits from getrandom).
std::string NewSessionId();

// Ended ids kept for their 410s (the oldest forgotten first).
inline constexpr size_t kEndedKept = 10000;

}  // namespace sentry::session

#endif  // SENTRY_SESSION_SESSION_MANAGER_H_
