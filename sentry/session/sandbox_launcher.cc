#include "sentry/session/sandbox_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "sentry/base/fd_passing.h"
#include "sentry/base/log.h"
#include "sentry/base/status_macros.h"
#include "sentry/net/net_policy.h"

namespace sentry::session {
namespace {

using nlohmann::json;

constexpr size_t kMaxSpecBytes = 16 << 20;

// The fds of one launch message, in order.
enum LaunchFd { kSpec, kRequests, kFrames, kMessages, kLog, kControl, kLaunchFds };
// An adopting launch ('a') sends one more: the hand-off socket.
constexpr int kAdoptFd = kLaunchFds;
using LaunchFds = std::array<UniqueFd, kLaunchFds + 1>;
static_assert(kLaunchFds + 1 <= kMaxPassedFds);

std::vector<uint8_t> EncodeSpec(const SandboxSpec& s) {
  json j = {{"argv", s.argv},           {"memory", s.memory_bytes},
            {"pids", s.pids},           {"disk", s.disk_bytes},
            {"nofile", s.nofile},       {"cpus", s.cpus},
            {"timeout", s.timeout_sec}, {"none", s.network_none},
            {"allow", s.allow},         {"env", s.env}};
  return json::to_cbor(j);
}

void DecodeSpec(const json& j, RunOptions* o) {
  o->argv = j.at("argv").get<std::vector<std::string>>();
  auto env = j.at("env").get<std::vector<std::string>>();
  o->env.insert(o->env.end(), env.begin(), env.end());
  if (uint64_t v = j.at("memory").get<uint64_t>()) o->memory_bytes = v;
  if (uint64_t v = j.at("pids").get<uint64_t>()) o->pids = v;
  if (uint64_t v = j.at("disk").get<uint64_t>()) o->disk_bytes = v;
  if (uint64_t v = j.at("nofile").get<uint64_t>()) o->nofile = v;
  if (double v = j.at("cpus").get<double>(); v >= 0) o->cpus = v;
  o->timeout_sec = j.at("timeout").get<double>();
  if (j.at("none").get<bool>()) {
    o->net.allow.clear();
    o->net.secrets.clear();
  }
  auto allow = j.at("allow").get<std::vector<std::string>>();
  if (!allow.empty()) {
    o->net.allow.clear();
    for (const std::string& a : allow) {
      net::AllowRule rule;
      std::string why;
      if (net::ParseAllowRule(a, &rule, &why)) o->net.allow.push_back(rule);
    }
  }
}

bool ReadAll(int fd, std::string* out, size_t max) {
  struct stat st;
  if (fstat(fd, &st) < 0 || static_cast<size_t>(st.st_size) > max) return false;
  out->resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out->size()) {
    ssize_t n = pread(fd, out->data() + got, out->size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

// The session's supervisor, in a child of the zygote: never returns.
[[noreturn]] void SupervisorChild(const RunOptions& base, LaunchFds& fds) {
  // SIGTERM stays pending until the supervisor takes it in its signalfd.
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_SETMASK, &term, nullptr);
  signal(SIGCHLD, SIG_DFL);
  std::string bytes;
  if (!ReadAll(fds[kSpec].get(), &bytes, kMaxSpecBytes)) _exit(125);
  // The received fds may sit at 3: moved out of the way of 0-3 first.
  for (UniqueFd& fd : fds) fd = UniqueFd(fcntl(fd.get(), F_DUPFD_CLOEXEC, 10));
  if (dup2(fds[kRequests].get(), 0) < 0 || dup2(fds[kFrames].get(), 1) < 0 ||
      dup2(fds[kMessages].get(), 2) < 0 || dup2(fds[kLog].get(), 3) < 0) {
    _exit(125);
  }
  RunOptions o = base;
  try {
    DecodeSpec(json::from_cbor(bytes), &o);
  } catch (const json::exception& e) {
    log::Error(absl::StrCat("a malformed session spec reached the launcher: ", e.what()));
    _exit(125);
  }
  o.control_fd = fds[kControl].Release();  // the fork's control socket (FORK.md)
  if (fds[kAdoptFd]) o.adopt_fd = fds[kAdoptFd].Release();
  for (UniqueFd& fd : fds) fd.Reset();
  // The kernel's stdio are the server's pipes, relayed; nothing read from
  // the host's files; the run's result object to fd 3 at the end.
  o.json = false;
  o.tty = TtyMode::kOff;
  o.interactive = false;
  o.stdin_path.clear();
  o.stream_max_output = 0;
  o.copy_script = false;
  o.copies.clear();
  o.trace = o.timings = false;
  // No fast metadata in a session: a fork's child would keep the parent's
  // region mapped, whose answers are the parent's tree, not its own (the
  // fork refuses a shared mapping of it anyway).
  o.fast_metadata = false;
  o.log_path = "/proc/self/fd/3";
  _exit(RunSandbox(o));
}

[[noreturn]] void Zygote(const RunOptions& base, int sock) {
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  dup2(null_fd, 0);
  dup2(null_fd, 1);
  close(null_fd);
  while (true) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    pollfd p{sock, POLLIN, 0};
    if (poll(&p, 1, 500) == 0) continue;
    LaunchFds fds;
    char tag = 0;
    Received r = ReceiveWithFds(sock, &tag, 1, fds);
    if (r.bytes == 0) _exit(0);
    if (r.bytes < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      _exit(0);
    }
    bool adopt = tag == 'a';
    if ((tag != 's' && !adopt) || !fds[kLaunchFds - 1] || adopt != bool(fds[kAdoptFd])) {
      char no = 'n';
      SendWithFds(sock, &no, 1, {});
      continue;
    }
    pid_t pid = fork();
    if (pid == 0) {
      close(sock);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      signal(SIGHUP, SIG_DFL);
      SupervisorChild(base, fds);
    }
    // Opened before any waitpid: the pidfd is this child's, whenever it ends.
    UniqueFd pidfd(pid > 0 ? static_cast<int>(syscall(SYS_pidfd_open, pid, 0)) : -1);
    char ok = pidfd ? 'y' : 'n';
    int out[1] = {pidfd.get()};
    SendWithFds(sock, &ok, 1, pidfd ? std::span<const int>(out) : std::span<const int>());
  }
}

UniqueFd Memfd(const std::vector<uint8_t>& bytes) {
  UniqueFd fd(memfd_create("sentry-session", MFD_CLOEXEC));
  size_t done = 0;
  while (fd && done < bytes.size()) {
    ssize_t n = write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return UniqueFd();
    done += static_cast<size_t>(n);
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SandboxLauncher>> SandboxLauncher::Start(const RunOptions& base) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
    return ErrnoStatus("socketpair for the session launcher");
  }
  pid_t pid = fork();
  if (pid < 0) return ErrnoStatus("fork the session launcher");
  if (pid == 0) {
    close(sv[0]);
    Zygote(base, sv[1]);
  }
  close(sv[1]);
  return std::unique_ptr<SandboxLauncher>(new SandboxLauncher(UniqueFd(sv[0]), pid));
}

SandboxLauncher::~SandboxLauncher() {
  sock_.Reset();
  waitpid(zygote_, nullptr, 0);
}

absl::StatusOr<SandboxProcess> SandboxLauncher::Launch(const SandboxSpec& spec) {
  UniqueFd spec_fd = Memfd(EncodeSpec(spec));
  if (!spec_fd) return ErrnoStatus("write the session's spec");
  SandboxProcess out;
  std::array<UniqueFd, kLaunchFds> theirs;
  theirs[kSpec] = std::move(spec_fd);
  auto pipe_pair = [](UniqueFd* read_end, UniqueFd* write_end) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) return false;
    *read_end = UniqueFd(p[0]);
    *write_end = UniqueFd(p[1]);
    return true;
  };
  if (!pipe_pair(&theirs[kRequests], &out.requests) || !pipe_pair(&out.frames, &theirs[kFrames]) ||
      !pipe_pair(&out.messages, &theirs[kMessages]) || !pipe_pair(&out.log, &theirs[kLog])) {
    return ErrnoStatus("pipe");
  }
  int control[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, control) < 0) {
    return ErrnoStatus("socketpair for the supervisor's control");
  }
  out.control = UniqueFd(control[0]);
  theirs[kControl] = UniqueFd(control[1]);
  int fds[kLaunchFds + 1];
  for (int i = 0; i < kLaunchFds; ++i) fds[i] = theirs[i].get();
  fds[kAdoptFd] = spec.adopt_fd;
  bool adopt = spec.adopt_fd >= 0;
  std::lock_guard<std::mutex> lock(mu_);
  char tag = adopt ? 'a' : 's';
  if (SendWithFds(sock_.get(), &tag, 1,
                  std::span<const int>(fds, adopt ? kLaunchFds + 1 : kLaunchFds)) != 1) {
    return ErrnoStatus("hand the session over");
  }
  for (UniqueFd& fd : theirs) fd.Reset();
  std::array<UniqueFd, 1> pidfd;
  char ok = 0;
  Received r = ReceiveWithFds(sock_.get(), &ok, 1, pidfd);
  if (r.bytes != 1 || ok != 'y' || !pidfd[0]) {
    return absl::InternalError("the session launcher could not start a sandbox");
  }
  out.pidfd = std::move(pidfd[0]);
  return out;
}

}  // namespace sentry::session
