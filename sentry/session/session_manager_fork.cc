// SessionManager::Fork (FORK.md, step 7): the checks, one supervisor per
// child in adopt mode (a spare, fork_spares.h, or one started beside the
// fork), the fork on the parent (Session::Fork), and the children made
// sessions. A failure anywhere ends every child's supervisor.
#include <sys/socket.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "sentry/base/timeline.h"
#include "sentry/base/unique_fd.h"
#include "sentry/run/fork_control.h"
#include "sentry/session/fork_spares.h"
#include "sentry/session/session_manager.h"

namespace sentry::session {
namespace {

using nlohmann::json;

// How long the whole fork may take (the children's supervisors' start, the
// kernel's clones, every hand-off).
constexpr double kForkTimeoutSec = 60;

}  // namespace

bool SessionManager::HasLiveChildren(const Session* s) const {
  auto it = children_of_.find(s);
  if (it == children_of_.end()) return false;
  for (const auto& weak : it->second) {
    std::shared_ptr<Session> c = weak.lock();
    if (c && (!c->ended() || !c->gone())) return true;
  }
  return false;
}

void SessionManager::EndOrLinger(const std::shared_ptr<Session>& s, EndReason reason) {
  if (!HasLiveChildren(s.get())) {
    s->End(reason);
    return;
  }
  s->EndKeepingSandbox(reason);
  if (std::find(lingering_.begin(), lingering_.end(), s) == lingering_.end()) {
    lingering_.push_back(s);
  }
}

int SessionManager::ReservedFor(const std::string& tenant) const {
  auto it = reserved_.find(tenant);
  return it == reserved_.end() ? 0 : it->second;
}

Answer SessionManager::Fork(const std::string& tenant, const std::string& id, const json& request) {
  timeline::Mark("srv.fork.request");
  Answer refusal;
  std::shared_ptr<Session> parent = Find(tenant, id, &refusal);
  if (!parent) return refusal;
  if (!request.is_object()) return ErrorAnswer(400, "the body must be a JSON object");
  int count = 1;
  for (const auto& [key, value] : request.items()) {
    if (key != "count") return ErrorAnswer(400, "unknown field (known: count)", key);
    if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
        value.get<int64_t>() > static_cast<int64_t>(kMaxForkCount)) {
      return ErrorAnswer(400, absl::StrCat("an integer from 1 to ", kMaxForkCount), key);
    }
    count = static_cast<int>(value.get<int64_t>());
  }

  // The caps, for all the children at once (refused whole), held reserved
  // until they are sessions or given up.
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return ErrorAnswer(503, "the server is shutting down");
    int mine = ReservedFor(tenant);
    for (const auto& [sid, s] : live_) mine += s->tenant() == tenant;
    if (mine + count > options_.max_sessions_per_tenant) {
      return ErrorAnswer(429, absl::StrCat("this token has ", mine, " sessions open; ", count,
                                           " more would pass its cap (--max-sessions-per-token, ",
                                           options_.max_sessions_per_tenant, ")"));
    }
    if (static_cast<int>(live_.size()) + reserved_total_ + count > options_.max_sessions) {
      return ErrorAnswer(429, absl::StrCat(count,
                                           " more sessions would pass the server's cap "
                                           "(--max-sessions, ",
                                           options_.max_sessions, ")"));
    }
    reserved_[tenant] += count;
    reserved_total_ += count;
  }
  auto unreserve = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    if ((reserved_[tenant] -= count) <= 0) reserved_.erase(tenant);
    reserved_total_ -= count;
  };
  // Each child's supervisor: a spare started ahead where one fits, else one
  // started now, beside the parent's fork (S1's hand-off waits in its socket
  // until it reads it).
  std::vector<ForkSpares::Spare> kids = fork_spares_->Take(parent->spec(), count);
  // The spares are made again once this fork is answered: their set-up
  // would compete with the children's for the CPU.
  struct RefillAtEnd {
    ForkSpares& spares;
    ~RefillAtEnd() { spares.Refill(); }
  } refill_at_end{*fork_spares_};
  const size_t spare_count = kids.size();
  kids.resize(count);
  std::vector<UniqueFd> theirs(count);  // the other ends, for those started now
  for (size_t i = spare_count; i < kids.size(); ++i) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
      for (const auto& k : kids) {
        if (k.session) k.session->End(EndReason::kShutdown);
      }
      unreserve();
      return ErrorAnswer(500,
                         absl::StrCat("socketpair for a fork's hand-off: ", std::strerror(errno)));
    }
    kids[i].handoff = UniqueFd(sv[0]);
    theirs[i] = UniqueFd(sv[1]);
  }
  std::vector<int> handoff_fds;
  for (const auto& k : kids) handoff_fds.push_back(k.handoff.get());
  std::string launch_error;
  std::thread launching([&] {
    for (size_t i = spare_count; i < kids.size(); ++i) {
      SandboxSpec spec = parent->spec();
      spec.adopt_fd = theirs[i].get();
      auto launched = Session::Launch(*launcher_, spec);
      theirs[i].Reset();
      if (!launched.ok()) {
        launch_error = absl::StrCat("could not start child ", i + 1,
                                    "'s supervisor: ", launched.status().message());
        // The rest are not started: their hand-offs fail at once.
        for (size_t j = i + 1; j < kids.size(); ++j) theirs[j].Reset();
        return;
      }
      kids[i].session = std::move(*launched);
    }
    timeline::Mark("srv.s2.launched");
  });

  std::vector<int64_t> pids;
  std::string why;
  Status st = parent->Fork(handoff_fds, kForkTimeoutSec, &pids, &why);
  launching.join();
  std::vector<std::shared_ptr<Session>> children;
  for (auto& k : kids) {
    k.handoff.Reset();  // S1 has its copies (or has refused)
    if (k.session) children.push_back(std::move(k.session));
  }
  auto fail = [&](int status, const std::string& why) {
    for (const auto& c : children) c->End(EndReason::kShutdown);
    for (const auto& c : children) c->WaitGone(10);
    unreserve();
    return ErrorAnswer(status, why);
  };
  if (st == Status::kBusy) {
    return fail(409, "a cell, command or fork is running in the session; fork it between cells");
  }
  if (st == Status::kEnded) {
    std::optional<Ended> e = parent->ended();
    return fail(410,
                absl::StrCat("the session ended during the fork: ", e ? ReasonName(e->reason) : "",
                             e ? " " : "", e ? e->detail : ""));
  }
  if (!launch_error.empty()) return fail(500, launch_error);
  if (!why.empty()) return fail(409, absl::StrCat("the fork failed: ", why));

  // Each child's kernel says "forked" on its own frames.
  for (size_t i = 0; i < children.size(); ++i) {
    std::string not_ready;
    if (!children[i]->WaitReady(options_.ready_timeout_sec, &not_ready)) {
      return fail(500, absl::StrCat("child ", i + 1, " (pid ", pids[i],
                                    " in the parent) did not "
                                    "start: ",
                                    not_ready));
    }
  }
  timeline::Mark("srv.children.ready");
  Answer a;
  a.status = 201;
  a.body = {{"sessions", json::array()}};
  std::lock_guard<std::mutex> lock(mu_);
  if ((reserved_[tenant] -= count) <= 0) reserved_.erase(tenant);
  reserved_total_ -= count;
  if (stopping_) {
    for (const auto& c : children) c->End(EndReason::kShutdown);
    return ErrorAnswer(503, "the server is shutting down");
  }
  for (const auto& c : children) {
    SessionTerms terms = parent->terms();
    terms.id = NewSessionId();
    c->Claim(terms);  // its own idle and lifetime clocks, from now
    live_[terms.id] = c;
    children_of_[parent.get()].push_back(c);
    a.body["sessions"].push_back(terms.id);
  }
  return a;
}

}  // namespace sentry::session
