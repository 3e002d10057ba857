#include "sentry/pool/pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/base/fd_table.h"
#include "sentry/base/log.h"
#include "sentry/base/unique_fd.h"
#include "sentry/pool/pool_wire.h"
#include "sentry/pool/warm_bootstrap.h"
#include "sentry/run/cgroups.h"
#include "sentry/run/stdio.h"
#include "sentry/run/terminal.h"

namespace sentry {
namespace {

// How long a client that connected may take to send its request.
constexpr int kRequestTimeoutSec = 5;
// Warm workers that die before serving, in a row, before the daemon gives up.
constexpr int kMaxWarmFailures = 3;

bool FillAddress(const std::string& path, sockaddr_un* a) {
  *a = {};
  a->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(a->sun_path)) return false;
  std::memcpy(a->sun_path, path.data(), path.size());
  return true;
}

UniqueFd Connect(const std::string& path) {
  sockaddr_un a;
  if (!FillAddress(path, &a)) {
    errno = ENAMETOOLONG;
    return UniqueFd();
  }
  UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) return s;
  if (connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) < 0) return UniqueFd();
  return s;
}

// A request this sandbox will not serve: the client is told why (it runs
// cold), and the sandbox is taken down unused.
int Refuse(WarmSandbox& warm, int client, const std::string& why) {
  pool::SendVerdict(client, false, why);
  warm.Abandon();
  return kExitSentryError;
}

// What a worker tells the daemon (on the taken pipe).
struct WorkerNews {
  pid_t pid;
  int32_t taken;  // 0: ready (its sandbox is made), 1: it took a client
};

void Tell(int fd, bool taken) {
  WorkerNews n{getpid(), taken ? 1 : 0};
  (void)!write(fd, &n, sizeof(n));
}

// One request in the warm sandbox; the connection's other end is the client.
int ServeClient(WarmSandbox& warm, int client, const RunOptions& shape) {
  ucred peer{};
  socklen_t len = sizeof(peer);
  if (getsockopt(client, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0 || peer.uid != geteuid()) {
    return Refuse(warm, client, absl::StrCat("this pool serves uid ", geteuid(), " only"));
  }
  timeval tv{kRequestTimeoutSec, 0};
  setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::array<UniqueFd, 5> fds;  // 0-2, and the tees of a streamed run
  auto body = pool::ReceiveRequest(client, &fds);
  absl::StatusOr<pool::Request> req =
      body.ok() ? pool::DecodeRequest(*body) : absl::StatusOr<pool::Request>(body.status());
  std::string refusal;
  if (!req.ok()) {
    refusal = std::string(req.status().message());
  } else if (req->shape != pool::ShapeOf(shape)) {
    refusal = absl::StrCat("the pool's sandboxes are not of this run's shape (",
                           pool::ShapeOf(shape), ")");
  } else if (warm.python() && !WarmPythonCanServe(req->options, &refusal)) {
  } else if (chdir(req->cwd.c_str()) < 0) {
    refusal = absl::StrCat("cannot enter ", req->cwd, ": ", std::strerror(errno));
  }
  if (!refusal.empty()) return Refuse(warm, client, refusal);
  tv = {0, 0};
  setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  // From here this process's stdio is the client's: the guest's relays, the
  // result and every message go there.
  for (int i = 0; i < 3; ++i) {
    if (dup2(fds[i].get(), i) < 0) return Refuse(warm, client, "cannot take the client's stdio");
  }
  if (!pool::SendVerdict(client, true, "")) return Refuse(warm, client, "the client is gone");
  pool::TakeShape(shape, &req->options);
  // Held here until the run is over (the relays write to them).
  req->options.stdout_tee_fd = fds[3] ? fds[3].get() : -1;
  req->options.stderr_tee_fd = fds[4] ? fds[4].get() : -1;
  return warm.Serve(req->options, client);  // which answers the exit code on client
}

// A warm worker: makes its sandbox, then serves the first client to come.
[[noreturn]] void WorkerMain(const PoolOptions& options, int listener, int taken, pid_t daemon) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != daemon) _exit(kExitSentryError);
  ReserveFdTable();  // the fork gave this process a table of its own
  // Made with the CPU runs leave (its guest inherits this); a run takes
  // the normal priority back (Prioritize).
  setpriority(PRIO_PROCESS, 0, options.refill_nice);
  RunOptions shape;
  shape.userns = options.userns;
  std::string error;
  std::unique_ptr<WarmSandbox> warm = options.python
                                          ? WarmSandbox::MakePython(shape, options.preload, &error)
                                          : WarmSandbox::Make(shape, &error);
  if (!warm) {
    log::Error(absl::StrCat("pool: cannot make a sandbox: ", error));
    _exit(kExitSentryError);
  }
  // Made: waiting costs no CPU, and the run that comes is not to wait for
  // a niced worker to be scheduled.
  warm->Prioritize();
  Tell(taken, false);
  int client;
  if (options.python) {
    // Its guest runs already: it is answered while the worker waits (the
    // listener is non-blocking; another worker may take the connection).
    do {
      client = -1;
      if (!warm->IdleUntilReadable(listener)) {
        warm->Abandon();
        _exit(kExitSentryError);
      }
      client = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    } while (client < 0 && (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED));
  } else {
    do {
      client = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    } while (client < 0 && (errno == EINTR || errno == ECONNABORTED));
  }
  if (client < 0) {
    // The daemon shut the socket down: it stops. The sandbox goes with this
    // process, which reaps it (its guest is traced from here).
    warm->Abandon();
    _exit(0);
  }
  // Taken (the daemon makes the next one when this run is over). This run
  // finishes even if the daemon goes away meanwhile.
  Tell(taken, true);
  close(taken);
  close(listener);
  prctl(PR_SET_PDEATHSIG, 0);
  int code = ServeClient(*warm, client, shape);
  warm.reset();
  close(client);
  _exit(code);
}

}  // namespace

bool PoolCanServe(const RunOptions& o, std::string* why) {
  if (!o.trace_file.empty() || !o.trace_timestamps.empty()) {
    *why = "--trace-file and --trace-timestamps need a cold start";
    return false;
  }
  if (!o.tools.empty()) {
    *why = "--tool needs a cold start (the channel and the module are made with the sandbox)";
    return false;
  }
  if (!o.copy_out.empty()) {
    *why = "--copy-out needs a cold start (the pool's sandbox writes nothing of the caller's)";
    return false;
  }
  // A warm sandbox's stdout and stderr are two pipes, made before its caller.
  if (o.merge_stderr || (!o.json && SameOutput(1, 2))) {
    *why = "one ordered stream for stdout and stderr (2>&1, --merge-stderr) needs a cold start";
    return false;
  }
  if (!o.census_path.empty()) {
    *why = "--census needs a cold start (a census filter from the guest's first call)";
    return false;
  }
  // (The id mode is the pool's to match: it refuses a run of another.)
  RunOptions warm_shape;
  warm_shape.userns = o.userns;
  if (pool::ShapeOf(o) != pool::ShapeOf(warm_shape)) {
    *why =
        "--root, --disk, --no-cgroups, --no-landlock, namespace flags and network flags need a "
        "cold start";
    return false;
  }
  // The guest's terminal is made with the guest (see GuestTerminal), which
  // a sandbox made before its caller cannot do.
  bool terminal = GuestTerminal::FdsFor(o.tty, o.json, o.stdin_path) != 0;
  if (terminal) *why = "a terminal on stdin, stdout or stderr (or -t) needs a cold start";
  return !terminal;
}

std::optional<int> RunInPool(const std::string& socket_path, const RunOptions& o,
                             std::string* why) {
  UniqueFd s = Connect(socket_path);
  if (!s) {
    *why = absl::StrCat("cannot reach the pool at ", socket_path, ": ", std::strerror(errno));
    return std::nullopt;
  }
  char cwd[4096];
  if (!getcwd(cwd, sizeof(cwd))) {
    *why = "the working directory has no name";
    return std::nullopt;
  }
  if (!pool::SendRequest(s.get(), pool::EncodeRequest(o, cwd))) {
    int err = errno;
    // A pool that refuses a caller before it reads the request (another
    // uid) has sent its verdict and closed, which can break the send: the
    // verdict is then the reason.
    char verdict;
    if (recv(s.get(), &verdict, 1, MSG_PEEK | MSG_DONTWAIT) == 1 && verdict == 'R') {
      pool::ReceiveVerdict(s.get(), why);
    } else {
      *why = absl::StrCat("cannot send the request to the pool: ", std::strerror(err));
    }
    return std::nullopt;
  }
  if (!pool::ReceiveVerdict(s.get(), why)) return std::nullopt;
  // The run has started: the signals this process gets go to the guest (as a
  // cold run's would), and this process ends with the guest's exit code.
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&mask, sig);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  UniqueFd sig(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  while (true) {
    pollfd pfd[2] = {{s.get(), POLLIN, 0}, {sig.get(), POLLIN, 0}};
    if (poll(pfd, 2, -1) < 0 && errno != EINTR) break;
    signalfd_siginfo si;
    while (sig && read(sig.get(), &si, sizeof(si)) == sizeof(si)) {
      int32_t signo = static_cast<int32_t>(si.ssi_signo);
      (void)!send(s.get(), &signo, sizeof(signo), MSG_NOSIGNAL);
    }
    if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    int32_t code;
    ssize_t n = recv(s.get(), &code, sizeof(code), MSG_WAITALL);
    if (n == sizeof(code)) return code;
    break;
  }
  std::fprintf(stderr, "sentry: the pool's sandbox ended without a result\n");
  return kExitSentryError;
}

int RunPool(const PoolOptions& options) {
  // Every sentry's Cgroups::SweepStale takes a sentry-PID cgroup for a live
  // run's only if PID's comm is "sentry"; a daemon exec'd as /proc/self/exe
  // (serve's, mcp's) was "exe", and its workers' cgroups, empty while being
  // made, were swept away under them (a warm run then lacked cgroup-pids).
  // The workers inherit the name.
  prctl(PR_SET_NAME, "sentry");
  sockaddr_un addr;
  if (!FillAddress(options.socket_path, &addr)) {
    std::fprintf(stderr, "sentry pool: --socket needs a path of at most %zu bytes\n",
                 sizeof(addr.sun_path) - 1);
    return kExitSentryError;
  }
  struct stat st;
  if (lstat(options.socket_path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      std::fprintf(stderr, "sentry pool: %s exists and is not a socket\n",
                   options.socket_path.c_str());
      return kExitSentryError;
    }
    if (Connect(options.socket_path)) {
      std::fprintf(stderr, "sentry pool: a pool already listens on %s\n",
                   options.socket_path.c_str());
      return kExitSentryError;
    }
    unlink(options.socket_path.c_str());  // a dead pool's
  }
  // Bound under a name of its own and renamed into place once it listens:
  // a client that finds the socket (WarmPythonPool::Start waits for it to
  // appear) never connects between the bind and the listen, which refused
  // it (ECONNREFUSED). Where that name would not fit, bound in place.
  std::string staged = absl::StrCat(options.socket_path, ".", getpid());
  sockaddr_un staged_addr;
  bool rename_after = FillAddress(staged, &staged_addr);
  // A dead pool of this pid may have left its staged socket; nothing else
  // there is removed.
  if (rename_after && lstat(staged.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    unlink(staged.c_str());
  }
  const std::string& bind_path = rename_after ? staged : options.socket_path;
  UniqueFd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  mode_t old_umask = umask(077);  // the socket is its owner's only
  bool bound = listener && bind(listener.get(),
                                reinterpret_cast<sockaddr*>(rename_after ? &staged_addr : &addr),
                                sizeof(addr)) == 0;
  umask(old_umask);
  if (!bound || chmod(bind_path.c_str(), 0600) < 0 || listen(listener.get(), 64) < 0 ||
      (options.python && fcntl(listener.get(), F_SETFL, O_NONBLOCK) < 0) ||
      // NOREPLACE: a pool that started meanwhile keeps its socket (EEXIST),
      // as bind in place refused the second one (EADDRINUSE).
      (rename_after && renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, options.socket_path.c_str(),
                                 RENAME_NOREPLACE) < 0)) {
    int err = errno;
    if (bound && rename_after) unlink(staged.c_str());
    std::fprintf(stderr, "sentry pool: cannot listen on %s: %s\n", options.socket_path.c_str(),
                 std::strerror(err));
    return kExitSentryError;
  }
  int taken_pipe[2];
  if (pipe2(taken_pipe, O_CLOEXEC) < 0) return kExitSentryError;
  UniqueFd taken_r(taken_pipe[0]), taken_w(taken_pipe[1]);
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, sig);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  UniqueFd sig(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  // What a killed worker leaves (its sandbox's pid 1, dying of its parent's
  // death) comes here to be reaped, not to the host's init.
  prctl(PR_SET_CHILD_SUBREAPER, 1);

  std::set<pid_t> making;  // workers making their sandbox
  std::set<pid_t> warm;    // workers that have not taken a client
  std::set<pid_t> busy;    // workers serving one
  pid_t self = getpid();
  bool stopping = false;
  auto spawn = [&] {
    pid_t pid = fork();
    if (pid == 0) {
      sig.Reset();
      taken_r.Reset();
      WorkerMain(options, listener.get(), taken_w.get(), self);
    }
    if (pid > 0) {
      warm.insert(pid);
      making.insert(pid);
      log::Trace(absl::StrCat("pool: worker ", pid, " makes a sandbox"));
    }
  };
  // The refill takes at most `refill` sandboxes' making at a time: its CPU
  // is bounded, and what is left goes to the runs.
  auto top_up = [&] {
    while (!stopping && static_cast<int>(making.size()) < options.refill &&
           static_cast<int>(warm.size()) < options.size) {
      spawn();
    }
  };
  top_up();
  UniqueFd ready_fd;
  if (!options.ready_file.empty()) {
    ready_fd = UniqueFd(open(options.ready_file.c_str(),
                             O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  }
  // Fixed width, written in place: a reader never sees half a number.
  auto publish = [&] {
    if (!ready_fd) return;
    std::string n = absl::StrFormat("%8d\n", static_cast<int>(warm.size() - making.size()));
    (void)!pwrite(ready_fd.get(), n.data(), n.size(), 0);
  };
  publish();
  log::Info(absl::StrFormat("pool: listening on %s, %d %s kept warm", options.socket_path,
                            options.size, options.python ? "python interpreters" : "sandboxes"));
  int failures = 0;
  int code = 0;
  while (!stopping) {
    pollfd pfd[2] = {{taken_r.get(), POLLIN, 0}, {sig.get(), POLLIN, 0}};
    if (poll(pfd, 2, -1) < 0 && errno != EINTR) break;
    WorkerNews news;
    while ((pfd[0].revents & POLLIN) && read(taken_r.get(), &news, sizeof(news)) == sizeof(news)) {
      making.erase(news.pid);
      failures = 0;
      log::Trace(
          absl::StrCat("pool: worker ", news.pid, news.taken ? " serves a run" : " is ready"));
      if (news.taken) {
        // Its replacement is made when its run is over: made now, it would
        // take CPU from that very run (measured: +7 ms on `python3 -c pass`
        // here); the other warm sandboxes serve the requests meanwhile.
        warm.erase(news.pid);
        busy.insert(news.pid);
      } else {
        top_up();  // the next of the first fill
      }
      pollfd more = {taken_r.get(), POLLIN, 0};
      if (poll(&more, 1, 0) <= 0) break;
    }
    signalfd_siginfo si;
    while (read(sig.get(), &si, sizeof(si)) == sizeof(si)) {
      if (si.ssi_signo != SIGCHLD) stopping = true;
    }
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      making.erase(pid);
      if (busy.erase(pid)) {
        log::Trace(absl::StrCat("pool: worker ", pid, " has served its run"));
        top_up();
        continue;
      }
      if (!warm.erase(pid) || stopping) continue;
      log::Debug(
          absl::StrCat("pool: worker ", pid, " ended before it served (wait status ", status, ")"));
      // A worker died before it served: its sandbox could not be made (its
      // message is on stderr) or was killed. Try again, a few times.
      if (++failures >= kMaxWarmFailures) {
        log::Error(absl::StrFormat(
            "pool: %d sandboxes in a row could not be kept warm; stopping (see the messages "
            "above; `sentry check` may say why)",
            failures));
        code = kExitSentryError;
        stopping = true;
        break;
      }
      usleep(100 * 1000);
      top_up();
    }
    Cgroups::SweepStale();  // what killed workers left
    publish();
  }
  // Sandboxes waiting for a client go (shut down, their accept fails and
  // they take their sandboxes down); runs in progress finish on their own.
  unlink(options.socket_path.c_str());
  shutdown(listener.get(), SHUT_RDWR);
  // A warm interpreter's worker polls (its guest runs): a signal stops it.
  if (options.python) {
    for (pid_t pid : warm) kill(pid, SIGTERM);
  }
  for (int i = 0; i < 2000 && !warm.empty(); ++i) {
    pid_t pid;
    while ((pid = waitpid(-1, nullptr, WNOHANG)) > 0) warm.erase(pid);
    if (!warm.empty()) usleep(1000);
  }
  bool killed = !warm.empty();
  for (pid_t pid : warm) kill(pid, SIGKILL);  // a worker that did not stop in 2 s
  for (pid_t pid : warm) waitpid(pid, nullptr, 0);
  // Their sandboxes die with them (their loaders' parent-death signal); the
  // cgroups can go once the last task has. A worker stopped by SIGTERM while
  // its sandbox was still being made may leave its cgroup too: swept here
  // (for up to 200 ms, 1 s after a SIGKILL).
  for (int i = 0; i < (killed ? 1000 : 200) && Cgroups::SweepStale() > 0; ++i) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    usleep(1000);
  }
  return code;
}

}  // namespace sentry
