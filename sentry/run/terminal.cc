#include "sentry/run/terminal.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>

namespace sentry {
namespace {

// Writes all of p unless stop_fd (-1: none) becomes readable first.
bool WriteAll(int fd, const char* p, size_t n, int stop_fd = -1) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      pollfd pfd[2] = {{fd, POLLOUT, 0}, {stop_fd, POLLIN, 0}};
      if (poll(pfd, 2, -1) < 0 && errno != EINTR) return false;
      if (pfd[1].revents) return false;
      continue;
    }
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool StdinIsRelayed(const std::string& stdin_path) {
  return stdin_path.empty() || stdin_path == "-";
}

}  // namespace

int GuestTerminal::FdsFor(TtyMode mode, bool json, const std::string& stdin_path) {
  if (json || mode == TtyMode::kOff) return 0;
  int in = StdinIsRelayed(stdin_path) ? 1 : 0;
  if (mode == TtyMode::kOn) return in | 6;
  int fds = 0;
  if (in && isatty(0)) fds |= 1;
  if (isatty(1)) fds |= 2;
  if (isatty(2)) fds |= 4;
  return fds;
}

void GuestTerminal::Start(UniqueFd master, int fds) {
  master_ = std::move(master);
  // Both relays wait in poll: a guest that reads nothing must not block
  // the input relay in a write that Finish could not end.
  fcntl(master_.get(), F_SETFL, fcntl(master_.get(), F_GETFL) | O_NONBLOCK);
  for (int fd : {0, 1, 2}) {
    if ((fds & (1 << fd)) && isatty(fd)) {
      size_from_ = fd;
      break;
    }
  }
  if (size_from_ >= 0) {
    termios t;
    if (tcgetattr(size_from_, &t) == 0) tcsetattr(master_.get(), TCSANOW, &t);
    Resize();
  }
  out_fd_ = (fds & 2) ? 1 : (fds & 4) ? 2 : size_from_;
  // A sentry started in the background (`&`) leaves the caller's terminal
  // alone: setting it or reading it would stop sentry (SIGTTOU, SIGTTIN).
  // The guest's terminal then gets no input, as a background job reads none.
  if ((fds & 1) && isatty(0) && tcgetpgrp(0) != getpgrp()) fds &= ~1;
  if ((fds & 1) && isatty(0) && tcgetattr(0, &saved_) == 0) {
    // Raw both ways, as docker's: every key goes to the guest's line
    // discipline, and its output reaches the screen as it wrote it (a
    // full-screen program that turned ONLCR off moves down a line with \n).
    termios raw = saved_;
    cfmakeraw(&raw);
    if (tcsetattr(0, TCSANOW, &raw) == 0) raw_fd_ = 0;
  }
  output_ = std::thread([this] { Relay(); });
  if (fds & 1) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) == 0) {
      stop_r_ = UniqueFd(p[0]);
      stop_w_ = UniqueFd(p[1]);
      input_ = std::thread([this] { RelayInput(); });
    }
  }
}

void GuestTerminal::Resize() {
  if (!active() || size_from_ < 0) return;
  winsize ws;
  if (ioctl(size_from_, TIOCGWINSZ, &ws) == 0) ioctl(master_.get(), TIOCSWINSZ, &ws);
}

pid_t GuestTerminal::ForegroundGroup() const {
  if (!active()) return -1;
  pid_t pgrp = -1;
  // On a master, TIOCGPGRP answers for its slave, in the caller's (the
  // sentry's) pid namespace.
  if (ioctl(master_.get(), TIOCGPGRP, &pgrp) < 0) return -1;
  return pgrp;
}

// The guest's output, until its last slave is closed (EIO).
void GuestTerminal::Relay() {
  char buf[1 << 16];
  bool writable = out_fd_ >= 0;
  while (true) {
    ssize_t n = read(master_.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd pfd{master_.get(), POLLIN, 0};
      poll(&pfd, 1, -1);
      continue;
    }
    if (n <= 0) return;
    if (writable) writable = WriteAll(out_fd_, buf, static_cast<size_t>(n));
  }
}

// The caller's stdin, until it ends or Finish says stop. Its end reaches the
// guest as the terminal's end-of-file character (^D), as a user types it.
void GuestTerminal::RelayInput() {
  char buf[4096];
  while (true) {
    pollfd pfd[2] = {{0, POLLIN, 0}, {stop_r_.get(), POLLIN, 0}};
    if (poll(pfd, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (pfd[1].revents) return;
    if (!pfd[0].revents) continue;
    ssize_t n = read(0, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      termios t;
      if (tcgetattr(master_.get(), &t) == 0 && (t.c_lflag & ICANON)) {
        char eof = static_cast<char>(t.c_cc[VEOF]);
        WriteAll(master_.get(), &eof, 1, stop_r_.get());
      }
      return;
    }
    if (!WriteAll(master_.get(), buf, static_cast<size_t>(n), stop_r_.get())) return;
  }
}

void GuestTerminal::Finish() {
  if (output_.joinable()) output_.join();
  if (stop_w_) (void)!write(stop_w_.get(), "x", 1);
  if (input_.joinable()) input_.join();
  RestoreCallersTerminal();
  master_.Reset();
  stop_r_.Reset();
  stop_w_.Reset();
}

void GuestTerminal::RestoreCallersTerminal() {
  if (raw_fd_ < 0) return;
  // A sentry moved to the background meanwhile would be stopped by SIGTTOU;
  // ignored, the kernel lets the change through.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGTTOU, &ignore, &old);
  tcsetattr(raw_fd_, TCSANOW, &saved_);
  sigaction(SIGTTOU, &old, nullptr);
  raw_fd_ = -1;
}

}  // namespace sentry
