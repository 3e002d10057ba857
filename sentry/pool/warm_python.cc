#include "sentry/pool/warm_python.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sentry/base/unique_fd.h"
#include "sentry/pool/pool_wire.h"
#include "sentry/pool/warm_bootstrap.h"
#include "sentry/pool/warm_sweep.h"

namespace sentry {
namespace {

// How long Start waits for the daemon's socket.
constexpr int kSocketWaitMs = 5000;

UniqueFd MemFd(const char* name, const std::string& data) {
  UniqueFd fd(memfd_create(name, MFD_CLOEXEC));
  if (!fd) return fd;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w = write(fd.get(), data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return UniqueFd();
    done += static_cast<size_t>(w);
  }
  lseek(fd.get(), 0, SEEK_SET);
  return fd;
}

std::string ReadAllFrom0(int fd) {
  std::string out;
  char buf[1 << 16];
  off_t at = 0;
  while (true) {
    ssize_t n = pread(fd, buf, sizeof(buf), at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return out;
}

UniqueFd ConnectTo(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof(a.sun_path)) return UniqueFd();
  std::memcpy(a.sun_path, path.data(), path.size());
  UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s || connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) < 0) return UniqueFd();
  return s;
}

}  // namespace

RunOptions WarmPythonPool::OptionsOf(const WarmRunRequest& request) {
  RunOptions o = request.limits;
  o.argv = request.argv;
  o.files = request.files;
  if (o.argv.empty()) {
    o.argv = {"python3", "main.py"};
    o.files.emplace_back("main.py", request.code);
  }
  o.json = true;
  o.copy_script = false;  // the server's cwd is not the guest's business
  o.copies.clear();
  o.stdin_path = request.stdin_bytes.empty() ? "" : "-";
  return o;
}

absl::StatusOr<std::unique_ptr<WarmPythonPool>> WarmPythonPool::Start(
    const WarmPythonOptions& options) {
  auto pool = std::unique_ptr<WarmPythonPool>(new WarmPythonPool());
  pool->options_ = options;
  // The pid names the server, and the lock it holds marks it alive, for the
  // sweep of a crashed server's directories (warm_sweep.h).
  std::string dir = absl::StrCat(WarmDirParent(), "/", kWarmDirPrefix, getpid(), "-XXXXXX");
  if (!mkdtemp(dir.data())) {  // 0700
    return absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
  }
  pool->dir_ = dir;
  pool->lock_ = LockWarmDir(dir);
  if (!pool->lock_)
    return absl::InternalError(absl::StrCat("lock ", dir, ": ", std::strerror(errno)));
  pool->socket_path_ = absl::StrCat(dir, "/pool.sock");
  std::vector<std::string> args = {"sentry",
                                   "pool",
                                   "--python",
                                   "--socket",
                                   pool->socket_path_,
                                   "--size",
                                   absl::StrCat(options.size),
                                   "--refill",
                                   absl::StrCat(options.refill),
                                   "--refill-nice",
                                   absl::StrCat(options.refill_nice)};
  args.push_back("--ready-file");
  args.push_back(absl::StrCat(dir, "/ready"));
  if (!options.preload.empty()) {
    args.push_back("--preload");
    args.push_back(absl::StrJoin(options.preload, ","));
  }
  // Everything the child needs is made before the fork: the caller may have
  // threads, and between fork and exec only async-signal-safe calls run.
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  UniqueFd log(open(options.log_path.empty() ? "/dev/null" : options.log_path.c_str(),
                    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!log) return absl::InternalError(absl::StrCat("the pool's log: ", std::strerror(errno)));
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(125);
    dup2(log.get(), 2);
    execv(options.sentry_binary.c_str(), argv.data());
    _exit(127);
  }
  pool->daemon_ = pid;
  for (int waited = 0; waited < kSocketWaitMs; waited += 5) {
    struct stat st;
    if (lstat(pool->socket_path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) return pool;
    if (waitpid(pid, nullptr, WNOHANG) == pid) {
      pool->daemon_ = -1;
      return absl::FailedPreconditionError("the pool daemon stopped at start (see its log)");
    }
    usleep(5000);
  }
  return absl::DeadlineExceededError("the pool daemon made no socket");
}

WarmPythonPool::~WarmPythonPool() {
  if (daemon_ > 0) {
    kill(daemon_, SIGTERM);
    waitpid(daemon_, nullptr, 0);
  }
  if (!socket_path_.empty()) unlink(socket_path_.c_str());
  if (!dir_.empty()) unlink(absl::StrCat(dir_, "/ready").c_str());
  if (!dir_.empty()) unlink(absl::StrCat(dir_, "/lock").c_str());
  if (!dir_.empty()) rmdir(dir_.c_str());
}

int WarmPythonPool::Ready() const {
  UniqueFd fd(open(absl::StrCat(dir_, "/ready").c_str(), O_RDONLY | O_CLOEXEC));
  char buf[16] = {};
  if (!fd || pread(fd.get(), buf, sizeof(buf) - 1, 0) <= 0) return 0;
  return std::max(0, atoi(buf));
}

namespace {

// The tees of a streamed run: pipes whose write ends go to the worker.
struct Tees {
  UniqueFd read[2], write[2];
  bool Make() {
    for (int i = 0; i < 2; ++i) {
      int p[2];
      if (pipe2(p, O_CLOEXEC) < 0) return false;
      read[i] = UniqueFd(p[0]);
      write[i] = UniqueFd(p[1]);
      fcntl(p[0], F_SETFL, O_NONBLOCK);
    }
    return true;
  }
  // What the pipes hold now, to on_output. false once both are at their end.
  bool Drain(const WarmPythonPool::OutputFn& on_output) {
    char buf[1 << 16];
    bool open = false;
    for (int i = 0; i < 2; ++i) {
      if (!read[i]) continue;
      while (true) {
        ssize_t n = ::read(read[i].get(), buf, sizeof(buf));
        if (n > 0) {
          on_output(i + 1, std::string_view(buf, static_cast<size_t>(n)));
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) read[i].Reset();
        break;
      }
      open = open || static_cast<bool>(read[i]);
    }
    return open;
  }
};

}  // namespace

std::optional<std::string> WarmPythonPool::Run(const WarmRunRequest& request, std::string* why,
                                               const OutputFn& on_output) {
  std::string unused;
  if (!why) why = &unused;
  RunOptions o = OptionsOf(request);
  if (!WarmPythonCanServe(o, why)) return std::nullopt;
  UniqueFd in = MemFd("sentry-stdin", request.stdin_bytes);
  UniqueFd out = MemFd("sentry-result", "");
  UniqueFd err = MemFd("sentry-stderr", "");
  if (!in || !out || !err) {
    *why = absl::StrCat("memfd: ", std::strerror(errno));
    return std::nullopt;
  }
  UniqueFd s = ConnectTo(socket_path_);
  if (!s) {
    *why = absl::StrCat("cannot reach the pool: ", std::strerror(errno));
    return std::nullopt;
  }
  Tees tees;
  if (on_output && !tees.Make()) {
    *why = absl::StrCat("pipe: ", std::strerror(errno));
    return std::nullopt;
  }
  const int fds[5] = {in.get(), out.get(), err.get(), tees.write[0].get(), tees.write[1].get()};
  if (!pool::SendRequest(s.get(), pool::EncodeRequest(o, "/"),
                         std::span<const int>(fds, on_output ? 5 : 3))) {
    *why = absl::StrCat("cannot send the request: ", std::strerror(errno));
    return std::nullopt;
  }
  // The worker holds the write ends now: the pipes end when it does.
  tees.write[0].Reset();
  tees.write[1].Reset();
  // An interpreter that is warm takes the connection at once; none within
  // the wait (all busy or refilling): the caller runs cold. (A worker that
  // takes the connection later finds it closed and serves nothing.)
  pollfd p = {s.get(), POLLIN, 0};
  if (poll(&p, 1, options_.accept_timeout_ms) <= 0) {
    *why = "no warm interpreter free";
    return std::nullopt;
  }
  // Until the exit code comes: a cancel hangs up, which ends the run.
  auto cancelled = [&](pollfd* c) {
    if (request.cancel_fd < 0 || !(c->revents & POLLIN)) return false;
    s.Reset();
    *why = "cancelled";
    return true;
  };
  if (!pool::ReceiveVerdict(s.get(), why)) return std::nullopt;
  // A streamed run: its output as it comes, until the exit code does (the
  // worker's relays are done by then: what is left is in the pipes).
  while (true) {
    pollfd p4[4] = {{s.get(), POLLIN, 0},
                    {on_output && tees.read[0] ? tees.read[0].get() : -1, POLLIN, 0},
                    {on_output && tees.read[1] ? tees.read[1].get() : -1, POLLIN, 0},
                    {request.cancel_fd, POLLIN, 0}};
    if (poll(p4, 4, -1) < 0 && errno != EINTR) break;
    if (cancelled(&p4[3])) return std::nullopt;
    if (on_output) tees.Drain(on_output);
    if (p4[0].revents) break;
  }
  int32_t code;
  ssize_t n;
  do {
    n = recv(s.get(), &code, sizeof(code), MSG_WAITALL);
  } while (n < 0 && errno == EINTR);
  if (on_output) tees.Drain(on_output);
  if (n != sizeof(code)) {
    *why = "the warm sandbox ended without a result";
    return std::nullopt;
  }
  std::string result = ReadAllFrom0(out.get());
  while (!result.empty() && result.back() == '\n') result.pop_back();
  if (result.empty()) {
    *why = absl::StrCat("the warm sandbox gave no result: ", ReadAllFrom0(err.get()));
    return std::nullopt;
  }
  return result;
}

}  // namespace sentry
