#include "sentry/run/stdio.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "sentry/base/status_macros.h"

namespace sentry {
namespace {

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= w;
  }
  return true;
}

// Copies from -> to until from ends; keeps reading after `to` fails, so the
// guest is never blocked on a full pipe. With a cap (a streamed run's, see
// Options::stream_cap), what comes past it is read and dropped, and a line
// at the end says how much.
// A streamed output whose reader is gone (`sentry run ... | head`): the
// guest's pipe is broken as a native writer's would be (its next write gets
// EPIPE, or SIGPIPE), and the sentry lives on to end the run, census and log
// written. The read end is replaced, not closed, by a dead pipe's: the fd
// number stays its owner's to close.
void BreakGuestPipe(int from) {
  int dead[2];
  if (pipe2(dead, O_CLOEXEC) < 0) return;
  close(dead[1]);
  dup3(dead[0], from, O_CLOEXEC);
  close(dead[0]);
}

void Pump(int from, int to, OutputBuffer* capture, uint64_t cap) {
  if (!capture) {
    // EPIPE, not the sentry's death by SIGPIPE (see BreakGuestPipe).
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  }
  char buf[1 << 16];
  bool writable = to >= 0;
  uint64_t passed = 0, dropped = 0;
  while (true) {
    ssize_t n = read(from, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (capture) capture->Append(buf, n);
    size_t pass = static_cast<size_t>(n);
    if (cap > 0) {
      pass = static_cast<size_t>(std::min<uint64_t>(pass, cap - passed));
      passed += pass;
      dropped += static_cast<uint64_t>(n) - pass;
    }
    if (writable && pass > 0) {
      writable = WriteAll(to, buf, pass);
      if (!writable && errno == EPIPE && !capture) BreakGuestPipe(from);
    }
  }
  if (writable && dropped > 0) {
    std::string line = absl::StrCat("\n[... ", dropped, " bytes dropped by sentry ...]\n");
    WriteAll(to, line.data(), line.size());
  }
}

// The guest's stdin: the prefix, then from -> to until either side ends.
// Unlike an output's Pump it stops at the first failed write: the guest has
// closed its stdin or is gone (EPIPE), and what is left of the caller's stdin
// is not the sentry's to drain (an endless one would take a CPU for the rest
// of the run); the caller's writer then gets EPIPE, as a native reader's
// exit gives it.
void RelayStdin(int from, int to, const std::string& prefix) {
  if (!WriteAll(to, prefix.data(), prefix.size()) || from < 0) return;
  char buf[1 << 16];
  while (true) {
    ssize_t n = read(from, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || !WriteAll(to, buf, static_cast<size_t>(n))) return;
  }
}

// A tee never blocks the guest's relay: non-blocking, with room for 1 MiB.
void PrepareTees(const std::array<int, 2>& tee) {
  for (int fd : tee) {
    if (fd < 0) continue;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    fcntl(fd, F_SETPIPE_SZ, 1 << 20);
  }
}

// The caller's stdin is /dev/null (an agent's usual): nothing to relay, and
// a thread not started.
bool IsDevNull(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

}  // namespace

bool SameOutput(int a, int b) {
  struct stat sa, sb;
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino && !IsDevNull(a);
}

GuestStdio::Options GuestStdio::OptionsFor(const RunOptions& o) {
  Options so;
  so.capture = o.json;
  so.stdin_path = o.stdin_path;
  so.max_output = o.max_output;
  so.stream_cap = o.stream_max_output;
  so.tee = {o.stdout_tee_fd, o.stderr_tee_fd};
  so.merge_stderr = o.merge_stderr;
  return so;
}

GuestStdio::~GuestStdio() { Finish(); }

absl::Status GuestStdio::Setup(const Options& options) {
  options_ = options;
  PrepareTees(options_.tee);
  out_ = std::make_unique<OutputBuffer>(options.max_output);
  err_ = std::make_unique<OutputBuffer>(options.max_output);
  if (options.relay_all) options_.tty_fds = 0;
  if (!(options_.tty_fds & 1)) RETURN_IF_ERROR(SetupStdin());
  // stdout, stderr
  bool neither_tty = !(options_.tty_fds & 6);
  if (neither_tty && !options_.capture && !options_.relay_all && SameOutput(1, 2)) {
    options_.merge_stderr = true;
  }
  if (neither_tty && options_.merge_stderr) {
    RETURN_IF_ERROR(MergeStderr());
  } else {
    for (int i = 1; i <= 2; ++i) {
      if (!(options_.tty_fds & (1 << i))) RETURN_IF_ERROR(MakeRelay(i));
    }
  }
  SetPipeOwner(options.pipe_uid, options.pipe_gid);
  return absl::OkStatus();
}

// One pipe, one relay: the order of the guest's writes is the pipe's, as
// natively where fds 1 and 2 share a file. The guest gets a pipe, never the
// caller's own file: with that file's description it could read back what the
// caller's earlier commands wrote there, truncate it, or fchmod it (a host
// file the caller owns), and with a terminal it could TIOCSTI into the
// caller's shell.
absl::Status GuestStdio::MergeStderr() {
  RETURN_IF_ERROR(MakeRelay(1));
  int fd = fcntl(child_[1].get(), F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return ErrnoStatus("dup");
  child_[2] = UniqueFd(fd);
  return absl::OkStatus();
}

absl::Status GuestStdio::SetupStdin() {
  const Options& options = options_;
  if (options.relay_all) return MakeRelay(0);  // its source: see Configure
  if (!options.stdin_path.empty() && options.stdin_path != "-") {
    return OpenStdinFile(options.stdin_path);
  }
  if ((options.capture && options.stdin_path.empty()) || IsDevNull(0)) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("open /dev/null");
    child_[0] = UniqueFd(fd);
    return absl::OkStatus();
  }
  // A pipe, a file, a socket, or a terminal the guest is not to have
  // (--no-tty): relayed.
  RETURN_IF_ERROR(MakeRelay(0));
  passthrough_[0] = 0;
  return absl::OkStatus();
}

absl::Status GuestStdio::DropTerminal() {
  int fds = options_.tty_fds;
  options_.tty_fds = 0;
  if (fds & 1) RETURN_IF_ERROR(SetupStdin());
  for (int i = 1; i <= 2; ++i) {
    if (fds & (1 << i)) RETURN_IF_ERROR(MakeRelay(i));
  }
  SetPipeOwner(options_.pipe_uid, options_.pipe_gid);
  return absl::OkStatus();
}

absl::Status GuestStdio::Configure(const Options& options) {
  options_.capture = options.capture;
  options_.stdin_path = options.stdin_path;
  options_.max_output = options.max_output;
  options_.tee = options.tee;
  PrepareTees(options_.tee);
  out_ = std::make_unique<OutputBuffer>(options.max_output);
  err_ = std::make_unique<OutputBuffer>(options.max_output);
  configured_.store(true, std::memory_order_release);
  if (!options.stdin_path.empty() && options.stdin_path != "-") {
    int fd = open(options.stdin_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(absl::StrCat("--stdin ", options.stdin_path));
    passthrough_[0] = fd;
  } else if (!(options.capture && options.stdin_path.empty()) && !IsDevNull(0)) {
    passthrough_[0] = 0;
  }  // else none: the guest reads an empty stdin
  return absl::OkStatus();
}

absl::Status GuestStdio::MakeRelay(int i) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return ErrnoStatus("pipe");
  // stdin's relay writes into the guest; stdout's and stderr's read from it.
  child_[i] = UniqueFd(p[i == 0 ? 0 : 1]);
  ours_[i] = UniqueFd(p[i == 0 ? 1 : 0]);
  identity_[i] = UniqueFd(fcntl(p[0], F_DUPFD_CLOEXEC, 3));  // relay_ends()
  return absl::OkStatus();
}

absl::Status GuestStdio::OpenStdinFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(absl::StrCat("--stdin ", path));
  // Relayed, not handed over: the guest never holds the caller's file.
  RETURN_IF_ERROR(MakeRelay(0));
  passthrough_[0] = fd;  // the source to pump from
  return absl::OkStatus();
}

void GuestStdio::SetPipeOwner(uid_t uid, gid_t gid) {
  for (int i = 0; i <= 2; ++i) {
    if (ours_[i]) fchown(child_[i].get(), uid, gid);
  }
}

int GuestStdio::relay_mask() const {
  int mask = 0;
  for (int i = 0; i <= 2; ++i)
    if (ours_[i] && child_[i]) mask |= 1 << i;
  return mask;
}

std::array<int, 3> GuestStdio::child_fds() const {
  return {child_[0].get(), child_[1].get(), child_[2].get()};
}

void GuestStdio::Start() {
  for (UniqueFd& fd : child_) fd.Reset();
  if (ours_[0] && !stdin_prefix_.empty()) WritePrefixNow();
  if (ours_[0] && passthrough_[0] < 0 && stdin_prefix_.empty()) {
    ours_[0].Reset();  // nothing to relay: end of file
  }
  if (ours_[0]) {
    // stdin may never end (a terminal left open): a detached thread, which
    // dies with the sentry, and the guest's end closes when the guest is gone.
    int from = passthrough_[0];
    int to = ours_[0].Release();
    std::thread([from, to, prefix = std::move(stdin_prefix_)] {
      // A guest gone before it read all is EPIPE here, not the sentry's end.
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      RelayStdin(from, to, prefix);
      close(to);
      if (from > 2) close(from);
    }).detach();
  }
  if (outputs_started_) return;
  for (int i = 1; i <= 2; ++i) {
    if (!ours_[i]) continue;
    int from = ours_[i].get();
    int to = options_.capture ? options_.tee[i - 1] : i;
    OutputBuffer* capture = options_.capture ? (i == 1 ? out_.get() : err_.get()) : nullptr;
    uint64_t cap = options_.capture ? 0 : options_.stream_cap;
    outputs_.emplace_back([from, to, capture, cap] { Pump(from, to, capture, cap); });
  }
  outputs_started_ = true;
}

// What of the prefix the pipe takes now is written from this thread (a
// warm interpreter's request, often all of it: no relay thread to start);
// the rest goes with the relay. A guest gone is EPIPE, its SIGPIPE taken.
void GuestStdio::WritePrefixNow() {
  int fd = ours_[0].get();
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return;
  sigset_t pipe, old;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &old);
  size_t done = 0;
  while (done < stdin_prefix_.size()) {
    ssize_t w = write(fd, stdin_prefix_.data() + done, stdin_prefix_.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  if (done < stdin_prefix_.size() && errno == EPIPE) {
    timespec zero{};
    sigtimedwait(&pipe, nullptr, &zero);
    done = stdin_prefix_.size();  // nobody reads it
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  fcntl(fd, F_SETFL, flags);
  stdin_prefix_.erase(0, done);
}

void GuestStdio::StartOutputsEarly() {
  if (options_.drop_early) ready_ = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  for (int i = 1; i <= 2; ++i) {
    child_[i].Reset();
    if (!ours_[i]) continue;
    int from = ours_[i].get();
    // Nothing comes before the guest's go, which follows Configure: the
    // first chunk finds the destination set (the go's pipe write and the
    // guest's own write order it; the flag's release/acquire says so).
    outputs_.emplace_back([this, from, i] {
      char buf[1 << 16];
      bool writable = true;
      while (true) {
        ssize_t n = read(from, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        bool configured = configured_.load(std::memory_order_acquire);
        if (!configured && options_.drop_early) {
          uint64_t one = 1;
          if (i == 1) (void)!write(ready_.get(), &one, sizeof(one));
          continue;
        }
        bool capture = configured && options_.capture;
        if (capture) {
          (i == 1 ? out_ : err_)->Append(buf, static_cast<size_t>(n));
          int tee = options_.tee[i - 1];
          if (writable && tee >= 0) writable = WriteAll(tee, buf, static_cast<size_t>(n));
        } else if (writable) {
          writable = WriteAll(i, buf, static_cast<size_t>(n));
        }
      }
    });
  }
  outputs_started_ = true;
}

void GuestStdio::Finish() {
  for (std::thread& t : outputs_)
    if (t.joinable()) t.join();
  outputs_.clear();
  terminal_.Finish();
}

}  // namespace sentry
