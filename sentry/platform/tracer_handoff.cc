// S1's side of a fork's hand-off (sentry/session/FORK.md step 3): a granted
// fork's child, held at its auto-attach stop since its clone, goes to its
// own supervisor S2 (sentry/run/adopt.h) without ever running untraced.
// The wire: platform/handoff_wire.h.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sentry/base/fd_passing.h"
#include "sentry/base/timeline.h"
#include "sentry/kernel/guest_proc.h"
#include "sentry/platform/handoff_wire.h"
#include "sentry/platform/tracer.h"
#include "vfs/vfs_snapshot.h"

namespace sentry {
namespace {

constexpr int kHandOffMaxFds = 1 << 16;  // the child's fds looked at

// Each relay end's pipe (device and inode: a pipe's two ends share them).
struct PipeId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool valid = false;
};

// The child's fds on the sentry's relay pipes, with their roles: each fd's
// object (a copy taken with pidfd_getfd, as the tracer may), not the
// guest's word.
absl::StatusOr<std::vector<std::pair<int, int>>> RelayFdsOf(GuestProcOpener& opener, pid_t tid,
                                                            int pidfd,
                                                            const std::array<int, 3>& ends) {
  std::array<PipeId, 3> ids;
  for (int i = 0; i < 3; ++i) {
    struct stat st;
    if (ends[i] >= 0 && fstat(ends[i], &st) == 0 && S_ISFIFO(st.st_mode)) {
      ids[i] = {st.st_dev, st.st_ino, true};
    }
  }
  std::optional<std::vector<int>> fds = GuestFdNumbers(opener, tid, kHandOffMaxFds);
  if (!fds) {
    return absl::InternalError(
        absl::StrCat("cannot list the forked child's fds: ", std::strerror(errno)));
  }
  std::vector<std::pair<int, int>> out;
  for (int fd : *fds) {
    UniqueFd copy = GuestFdCopy(pidfd, fd);
    struct stat st;
    if (!copy || fstat(copy.get(), &st) != 0 || !S_ISFIFO(st.st_mode)) continue;
    for (int i = 0; i < 3; ++i) {
      if (ids[i].valid && ids[i].dev == st.st_dev && ids[i].ino == st.st_ino &&
          out.size() < kHandOffMaxRelay) {
        out.emplace_back(fd, i);
      }
    }
  }
  return out;
}

int SendSignal(int pidfd, int sig) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

}  // namespace

std::vector<pid_t> Tracer::HeldForkChildren() {
  std::lock_guard<std::mutex> lock(kernel_.mu());
  std::vector<pid_t> out;
  for (pid_t tid : kernel_.fork_children) {
    const Task* t = kernel_.tasks().Find(tid);
    if (t && t->fork_child) out.push_back(t->ns_tid);
  }
  return out;
}

void Tracer::DropForkChild(pid_t child_ns_tid) {
  std::lock_guard<std::mutex> lock(kernel_.mu());
  Task* task = kernel_.tasks().FindByNsTid(child_ns_tid);
  if (task && task->fork_child) SendSignal(task->pidfd.get(), SIGKILL);
}

absl::Status Tracer::HandOffForkChild(pid_t child_ns_tid, int handoff_sock, const ForkHandOff& h) {
  return HandOffForkChildren({{child_ns_tid, handoff_sock}}, h)[0];
}

// One child's hand-off, through the phases of HandOffForkChildren.
struct Tracer::HandOffState {
  pid_t tid = -1;
  int sock = -1;
  UniqueFd pidfd, stream;
  bool done = false;  // failed (status says why) or not begun
  absl::Status status;
  vfs::SnapshotResult copied;
};

std::vector<absl::Status> Tracer::HandOffForkChildren(
    const std::vector<std::pair<pid_t, int>>& children, const ForkHandOff& h) {
  auto start = std::chrono::steady_clock::now();
  // S2s work in parallel; the replies are read in order, so the later ones
  // are given a little more time (a 2-core machine seizes 100 one by one).
  auto left_ms = [&](size_t i) {
    auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
    return std::max<long>(0, h.timeout_ms + static_cast<long>(i) * 20 - spent);
  };
  std::vector<HandOffState> all(children.size());
  // 1. Each child's header and fds sent, SIGSTOP queued, the child detached:
  // from here every S2 seizes its own while the others are sent.
  for (size_t i = 0; i < children.size(); ++i) {
    all[i].sock = children[i].second;
    BeginHandOff(children[i].first, h, left_ms(i), &all[i]);
  }
  // 2. The copies, with SIGPIPE held on this thread (an S2 may go away
  // midway): the tree does not change meanwhile (the kernel's lock, the
  // sandbox held).
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  for (size_t i = 0; i < all.size(); ++i) {
    HandOffState& st = all[i];
    if (st.done) continue;
    // A refusal already there (S2 refused the child at its seize) ends it
    // without the copy.
    char peek[8];
    bool refused = recv(st.sock, peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT) > 0 &&
                   std::memcmp(peek, "error", 5) == 0;
    // Bounded: an S2 that never reads must not hold the parent (its writes
    // fail once the time is spent).
    long ms = left_ms(i);
    timeval left{ms / 1000, static_cast<suseconds_t>((ms % 1000) * 1000)};
    if (left.tv_sec == 0 && left.tv_usec == 0) left.tv_usec = 1000;
    setsockopt(st.stream.get(), SOL_SOCKET, SO_SNDTIMEO, &left, sizeof(left));
    if (!refused) {
      std::lock_guard<std::mutex> lock(kernel_.mu());
      st.copied = vfs::WriteSnapshot(kernel_.vfs(), st.stream.get());
    }
    st.stream.Reset();
    timeline::Mark("s1.handoff.copied", static_cast<long>(i));
  }
  timespec zero{};
  while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  // 3. Each S2's word (it may refuse the child after reading the copy: its
  // reason).
  std::vector<absl::Status> out;
  for (size_t i = 0; i < all.size(); ++i) {
    HandOffState& st = all[i];
    if (!st.done) FinishHandOff(left_ms(i), &st);
    timeline::Mark("s1.handoff.answered", static_cast<long>(i));
    out.push_back(std::move(st.status));
  }
  return out;
}

void Tracer::BeginHandOff(pid_t child_ns_tid, const ForkHandOff& h, long timeout_ms,
                          HandOffState* st) {
  st->done = true;
  bool at_stop = false;
  HandOffHeader header;
  header.pid = child_ns_tid;
  header.env = h.env;
  {
    std::lock_guard<std::mutex> lock(kernel_.mu());
    Task* task = kernel_.tasks().FindByNsTid(child_ns_tid);
    if (!task || !task->fork_child) {
      st->status = absl::NotFoundError(absl::StrCat("no forked child ", child_ns_tid, " is held"));
      return;
    }
    st->tid = task->tid;
    at_stop = task->held_stopped;
    st->pidfd = UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, st->tid, 0)));
    header.cwd = "/";
    if (task->fs && task->fs->cwd) {
      if (auto path = kernel_.vfs().PathOf(task->fs->cwd); path.ok()) header.cwd = *path;
    }
  }
  pid_t tid = st->tid;
  auto start = std::chrono::steady_clock::now();
  auto expired = [&] {
    return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(timeout_ms);
  };
  // Ends the child (never left untraced) and forgets it.
  auto fail = [&](absl::Status why) {
    if (st->pidfd) SendSignal(st->pidfd.get(), SIGKILL);
    int status;
    // Its end, reaped by nobody but its parent: only the tracer's view of it.
    waitpid(tid, &status, __WALL);
    std::lock_guard<std::mutex> lock(kernel_.mu());
    kernel_.tasks().Remove(tid);
    st->status = std::move(why);
  };
  if (!st->pidfd) return fail(absl::InternalError("cannot open a pidfd of the forked child"));
  // Its auto-attach stop, if this thread has not seen it yet.
  while (!at_stop) {
    int status = 0;
    pid_t w = waitpid(tid, &status, __WALL | WNOHANG);
    if (w == tid && WIFSTOPPED(status) && (status >> 16) == PTRACE_EVENT_STOP) {
      at_stop = true;
    } else if (w == tid && (WIFEXITED(status) || WIFSIGNALED(status))) {
      OnWaitStatus(tid, status);
      st->status = absl::AbortedError("the forked child ended before its hand-off");
      return;
    } else if (w == tid) {
      if (st->pidfd) SendSignal(st->pidfd.get(), SIGKILL);
      std::lock_guard<std::mutex> lock(kernel_.mu());
      kernel_.tasks().Remove(tid);
      st->status = absl::InternalError("the forked child stopped other than at its start");
      return;
    } else if (expired()) {
      return fail(absl::DeadlineExceededError("the forked child never reached its first stop"));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  timeline::Mark("s1.handoff.start");
  auto relay = RelayFdsOf(kernel_.proc_opener(), tid, st->pidfd.get(), h.relay_ends);
  if (!relay.ok()) return fail(relay.status());
  header.relay = std::move(*relay);
  std::string bytes = EncodeHandOff(header);
  if (bytes.size() > kHandOffMaxBytes) {
    return fail(absl::InvalidArgumentError("the hand-off header is too long (environment)"));
  }
  int stream[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, stream) < 0) {
    return fail(absl::InternalError("socketpair for the VFS copy"));
  }
  UniqueFd theirs(stream[1]);
  st->stream = UniqueFd(stream[0]);
  int fds[2] = {st->pidfd.get(), theirs.get()};
  if (SendWithFds(st->sock, bytes.data(), bytes.size(), fds) !=
      static_cast<ssize_t>(bytes.size())) {
    return fail(absl::UnavailableError(absl::StrCat(
        "the hand-off failed: cannot reach the child's supervisor: ", std::strerror(errno))));
  }
  theirs.Reset();
  // The SIGSTOP is queued at the ptrace-stop, so the child group-stops
  // before it returns to user code once detached; S2 seizes it there.
  if (SendSignal(st->pidfd.get(), SIGSTOP) < 0 ||
      ptrace(PTRACE_DETACH, tid, nullptr, nullptr) < 0) {
    return fail(absl::InternalError(
        absl::StrCat("cannot detach the forked child: ", std::strerror(errno))));
  }
  timeline::Mark("s1.handoff.sent");
  {
    std::lock_guard<std::mutex> lock(kernel_.mu());
    kernel_.tasks().Remove(tid);  // (it stays in Kernel::fork_children: never the sandbox's)
  }
  st->done = false;
}

void Tracer::FinishHandOff(long timeout_ms, HandOffState* st) {
  char reply[512];
  ssize_t n = -1;
  pollfd p{st->sock, POLLIN, 0};
  while (true) {
    int r = poll(&p, 1, static_cast<int>(timeout_ms));
    if (r < 0 && errno == EINTR) continue;
    if (r > 0) n = recv(st->sock, reply, sizeof(reply), MSG_DONTWAIT);
    break;
  }
  std::string said = n > 0 ? std::string(reply, static_cast<size_t>(n)) : "";
  if (said == kHandOffSeized) return;
  if (!st->copied.ok() && said.empty()) said = "the VFS copy failed: " + st->copied.error;
  if (said.empty()) said = n == 0 ? "the child's supervisor hung up" : "no answer in time";
  // Detached: killed through its pidfd (S2 may hold it traced; nobody reaps
  // it here).
  SendSignal(st->pidfd.get(), SIGKILL);
  st->status = absl::AbortedError(
      absl::StrCat("the hand-off failed: the child's supervisor did not adopt it: ", said));
}

}  // namespace sentry
