#include "sentry/run/stdio.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

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
// guest is never blocked on a full pipe.
void Pump(int from, int to, OutputBuffer* capture) {
  char buf[1 << 16];
  bool writable = to >= 0;
  while (true) {
    ssize_t n = read(from, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    if (capture) capture->Append(buf, n);
    if (writable) writable = WriteAll(to, buf, n);
  }
}

}  // namespace

GuestStdio::~GuestStdio() { Finish(); }

absl::Status GuestStdio::Setup(const Options& options) {
  options_ = options;
  out_ = std::make_unique<OutputBuffer>(options.max_output);
  err_ = std::make_unique<OutputBuffer>(options.max_output);
  // stdin
  if (!options.stdin_path.empty() && options.stdin_path != "-") {
    int fd = open(options.stdin_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(absl::StrCat("--stdin ", options.stdin_path));
    // Relayed, not handed over: the guest never holds the caller's file.
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) return ErrnoStatus("pipe");
    child_[0] = UniqueFd(p[0]);
    ours_[0] = UniqueFd(p[1]);
    passthrough_[0] = fd;  // the source to pump from
  } else if (options.capture && options.stdin_path.empty()) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("open /dev/null");
    child_[0] = UniqueFd(fd);
  } else if (isatty(0)) {
    child_[0] = UniqueFd(dup(0));
  } else {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) return ErrnoStatus("pipe");
    child_[0] = UniqueFd(p[0]);
    ours_[0] = UniqueFd(p[1]);
    passthrough_[0] = 0;
  }
  // stdout, stderr
  for (int i = 1; i <= 2; ++i) {
    if (!options.capture && isatty(i)) {
      child_[i] = UniqueFd(dup(i));
      continue;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) return ErrnoStatus("pipe");
    ours_[i] = UniqueFd(p[0]);
    child_[i] = UniqueFd(p[1]);
  }
  SetPipeOwner(options.pipe_uid, options.pipe_gid);
  return absl::OkStatus();
}

void GuestStdio::SetPipeOwner(uid_t uid, gid_t gid) {
  for (int i = 0; i <= 2; ++i) {
    if (ours_[i]) fchown(child_[i].get(), uid, gid);
  }
}

std::array<int, 3> GuestStdio::child_fds() const {
  return {child_[0].get(), child_[1].get(), child_[2].get()};
}

void GuestStdio::Start() {
  for (UniqueFd& fd : child_) fd.Reset();
  if (ours_[0]) {
    // stdin may never end (a terminal left open): a detached thread, which
    // dies with the sentry, and the guest's end closes when the guest is gone.
    int from = passthrough_[0];
    int to = ours_[0].Release();
    std::thread([from, to] {
      Pump(from, to, nullptr);
      close(to);
      if (from > 2) close(from);
    }).detach();
  }
  for (int i = 1; i <= 2; ++i) {
    if (!ours_[i]) continue;
    int from = ours_[i].get();
    int to = options_.capture ? -1 : i;
    OutputBuffer* capture = options_.capture ? (i == 1 ? out_.get() : err_.get()) : nullptr;
    outputs_.emplace_back([from, to, capture] { Pump(from, to, capture); });
  }
}

void GuestStdio::Finish() {
  for (std::thread& t : outputs_)
    if (t.joinable()) t.join();
  outputs_.clear();
}

}  // namespace sentry
