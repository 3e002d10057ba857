// Session::Fork: the server's part of a session fork (FORK.md, step 7) on
// one session: the grant on the supervisor's control socket
// (run/fork_control.h), the kernel's fork op, and both their answers.
#include <poll.h>
#include <sys/socket.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "sentry/base/fd_passing.h"
#include "sentry/base/timeline.h"
#include "sentry/run/fork_control.h"
#include "sentry/session/session.h"

namespace sentry::session {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

static_assert(kMaxForkCount <= kMaxPassedFds, "a prepare carries a hand-off socket a child");

bool SendControl(int sock, ControlOp op, uint64_t id, uint32_t count, int32_t thread,
                 const std::vector<int>& fds) {
  ControlRequest req;
  req.op = static_cast<uint32_t>(op);
  req.id = id;
  req.count = count;
  req.thread = thread;
  return SendWithFds(sock, &req, sizeof(req), fds) == static_cast<ssize_t>(sizeof(req));
}

}  // namespace

bool Session::ReadControl(Clock::time_point deadline, uint32_t kind, uint64_t id, int* status,
                          std::string* reason, std::string* why, uint32_t* handed) {
  int sock = process_.control.get();
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      *why = "the sandbox's supervisor did not answer in time";
      return false;
    }
    pollfd p{sock, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ControlReply reply;
    ssize_t n = recv(sock, &reply, sizeof(reply), MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n == 0 || (n < 0 && p.revents & (POLLHUP | POLLERR))) {
      *why = "the sandbox's supervisor is gone";
      return false;
    }
    // A message of an earlier fork (an event after a withdrawn one): dropped.
    if (n != static_cast<ssize_t>(sizeof(reply)) || reply.magic != kControlMagic ||
        reply.kind != kind || reply.id != id) {
      continue;
    }
    *status = reply.status;
    reply.reason[sizeof(reply.reason) - 1] = '\0';
    *reason = reply.reason;
    if (handed) *handed = reply.children;
    return true;
  }
}

Status Session::Fork(const std::vector<int>& handoffs, double timeout_sec,
                     std::vector<int64_t>* children, std::string* why) {
  std::unique_lock<std::mutex> lock(mu_);
  if (ended_) return Status::kEnded;
  if (cell_ || forking_) return Status::kBusy;
  if (!process_.control) {
    *why = "this session's supervisor has no control socket";
    return Status::kOk;
  }
  forking_ = true;
  uint64_t id = fork_id_ = next_id_++;
  fork_done_.reset();
  last_used_ = Clock::now();
  int64_t thread = kernel_pid_;
  lock.unlock();
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(timeout_sec));
  auto finish = [&](Status st) {
    std::lock_guard<std::mutex> relock(mu_);
    forking_ = false;
    fork_id_ = 0;
    fork_done_.reset();
    last_used_ = Clock::now();
    return st;
  };
  int control = process_.control.get();
  auto cancel = [&] {
    // Withdraws the grant (children the kernel made are killed by S1).
    int st = 0;
    std::string reason, ignored;
    if (SendControl(control, ControlOp::kForkCancel, id, 0, 0, {})) {
      ReadControl(Clock::now() + std::chrono::seconds(5),
                  static_cast<uint32_t>(ControlKind::kReply), id, &st, &reason, &ignored);
    }
  };

  // 1. The grant, with the children's hand-off sockets.
  timeline::Mark("srv.prepare.send");
  if (!SendControl(control, ControlOp::kForkPrepare, id, static_cast<uint32_t>(handoffs.size()),
                   static_cast<int32_t>(thread), handoffs)) {
    *why = absl::StrCat("the fork could not be asked of the sandbox's supervisor: ",
                        std::strerror(errno));
    return finish(Status::kOk);
  }
  int status = 0;
  std::string reason;
  if (!ReadControl(deadline, static_cast<uint32_t>(ControlKind::kReply), id, &status, &reason,
                   why)) {
    cancel();
    return finish(Status::kOk);
  }
  if (status != 0) {
    *why = absl::StrCat("the sandbox's supervisor refused the fork: ", reason);
    return finish(Status::kOk);
  }

  // 2. The kernel forks (its re-listen and the hand-offs happen meanwhile).
  timeline::Mark("srv.prepare.ok");
  if (!Send(json{{"op", "fork"}, {"id", id}, {"count", handoffs.size()}})) {
    std::lock_guard<std::mutex> relock(mu_);
    EndLocked(EndReason::kCrashed, "the kernel stopped reading its requests");
  }
  lock.lock();
  cv_.wait_until(lock, deadline, [&] { return fork_done_.has_value() || ended_.has_value(); });
  std::optional<json> done = fork_done_;
  bool ended = ended_.has_value();
  lock.unlock();
  if (ended) return finish(Status::kEnded);
  if (!done) {
    *why = "the kernel did not answer the fork in time";
    cancel();
    return finish(Status::kOk);
  }
  if (done->value("status", json()) != "ok") {
    json err = done->value("error", json());
    *why = absl::StrCat("the kernel's fork failed: ",
                        err.is_object() ? err.value("value", json("")).dump() : done->dump());
    // The supervisor's word on it, if it refused the re-listen.
    std::string ignored;
    if (ReadControl(Clock::now() + std::chrono::milliseconds(500),
                    static_cast<uint32_t>(ControlKind::kRelistened), id, &status, &reason,
                    &ignored) &&
        status != 0) {
      absl::StrAppend(why, "; the supervisor: ", reason);
    }
    cancel();
    return finish(Status::kOk);
  }

  // 3. The supervisor's word that the re-listen ended and the children were
  // handed off.
  uint32_t handed = 0;
  if (!ReadControl(deadline, static_cast<uint32_t>(ControlKind::kRelistened), id, &status, &reason,
                   why, &handed)) {
    return finish(Status::kOk);
  }
  timeline::Mark("srv.relistened");
  if (status == 0 && handed != handoffs.size()) {
    *why = absl::StrCat("the sandbox's supervisor handed off ", handed, " children of ",
                        handoffs.size(), reason.empty() ? "" : ": ", reason);
    return finish(Status::kOk);
  }
  if (status != 0) {
    *why = absl::StrCat("the sandbox's supervisor did not complete the fork: ", reason);
    return finish(Status::kOk);
  }
  json pids = done->value("children", json());
  if (!pids.is_array() || pids.size() != handoffs.size()) {
    *why = absl::StrCat("the kernel's fork listed ", pids.is_array() ? pids.size() : 0,
                        " children of ", handoffs.size());
    return finish(Status::kOk);
  }
  for (const json& p : pids) children->push_back(p.is_number_integer() ? p.get<int64_t>() : 0);
  return finish(Status::kOk);
}

}  // namespace sentry::session
