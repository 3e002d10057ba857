// ForkSpares: the supervisors of a fork's children (run/adopt.h, "S2"),
// started ahead of need, as SessionManager keeps spare sessions.
//
// A fork's child is handed by its parent's supervisor to a supervisor of its
// own, started in adopt mode by the session launcher. Started on demand, that
// start (the zygote's fork, the supervisor's set-up of everything that does
// not depend on the child: its tree of the lower layer, its cgroup) lies on
// the fork's path; a spare has done it already and waits for its hand-off.
//
// The walls: a spare is made from the server's own configuration only
// (SessionManager::SpecFor of the server's limits), before any tenant asks,
// and holds nothing of anyone's until its one hand-off; it adopts one child
// and is that child's sandbox from then on (never handed out twice). A fork
// takes spares only for a parent of that same spec; any other parent's
// children get supervisors started for them (Launch). Bounded: at most
// `target` spares, each ended after kMaxAgeSec unused (its supervisor's own
// --timeout backstop also runs from its start). A server that never forks
// never starts one: the refill starts at the first Take. A spare that is
// never used ends cleanly (End: its supervisor exits without a child, its
// cgroup removed), at its age, when the server shuts down, or if its
// supervisor dies (dropped by the reaper, and made again).
//
//   ForkSpares spares(launcher, spec, 2);
//   std::vector<ForkSpares::Spare> kids = spares.Take(parent->spec(), n);  // 0..n
//   ... the rest: ForkSpares::Launch(launcher, parent->spec()) ...
//   spares.Refill();     // after the fork: the refill starts, off its path
//   spares.Shutdown();   // at the server's end
#ifndef SENTRY_SESSION_FORK_SPARES_H_
#define SENTRY_SESSION_FORK_SPARES_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "sentry/base/unique_fd.h"
#include "sentry/session/sandbox_launcher.h"
#include "sentry/session/session.h"

namespace sentry::session {

// Whether two specs start the same sandbox (a spare fits a parent of its spec).
bool SameSpec(const SandboxSpec& a, const SandboxSpec& b);

class ForkSpares final {
 public:
  // A spare unused this long is ended and made again.
  static constexpr double kMaxAgeSec = 600;

  // One child's supervisor, waiting for its hand-off on `handoff` (the
  // server's end of the SOCK_SEQPACKET socket its parent's supervisor gets).
  struct Spare {
    std::shared_ptr<Session> session;
    UniqueFd handoff;
    std::chrono::steady_clock::time_point made;
  };

  // Starts a child's supervisor for spec now (adopt mode).
  static absl::StatusOr<Spare> Launch(SandboxLauncher& launcher, const SandboxSpec& spec);

  // spec: the spares' (the server's limits); target: how many are kept (0: none).
  ForkSpares(SandboxLauncher& launcher, SandboxSpec spec, int target);
  ~ForkSpares();  // Shutdown()
  ForkSpares(const ForkSpares&) = delete;
  ForkSpares& operator=(const ForkSpares&) = delete;

  // Up to n spares for children of a parent of spec (none for another spec),
  // each still running.
  std::vector<Spare> Take(const SandboxSpec& spec, int n);
  // Makes spares up to the target, in the background, from now on (call
  // after a fork: the first call starts the refill thread).
  void Refill();
  // Ends every spare and the refill, and waits until their sandboxes are gone.
  void Shutdown();
  size_t ready() const;

 private:
  void RefillLoop();
  // Drops the spares past their age or whose supervisor died (mu_ held);
  // they are ended and appended to *ended.
  void DropStale(std::vector<std::shared_ptr<Session>>* ended);

  SandboxLauncher& launcher_;
  const SandboxSpec spec_;
  const int target_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Spare> ready_;
  bool started_ = false;  // the refill thread runs (from the first Refill)
  bool filling_ = false;  // asked to fill (Refill, or a spare dropped): till full
  bool stopping_ = false;
  std::thread refill_;
};

}  // namespace sentry::session

#endif  // SENTRY_SESSION_FORK_SPARES_H_
