#include "sentry/trace/trace_writer.h"

#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sentry::trace {
namespace {

constexpr size_t kResultColumn = 39;  // strace's -a 40: " = " starts past column 39

}  // namespace

std::optional<Timestamps> ParseTimestamps(const std::string& s) {
  if (s.empty() || s == "us" || s == "tt") return Timestamps::kMicros;
  if (s == "s" || s == "t") return Timestamps::kSeconds;
  if (s == "unix" || s == "ttt") return Timestamps::kUnix;
  if (s == "none") return Timestamps::kNone;
  return std::nullopt;
}

absl::StatusOr<std::shared_ptr<TraceWriter>> TraceWriter::OpenFile(const std::string& path,
                                                                   Timestamps ts) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
  if (fd < 0) return absl::InvalidArgumentError(absl::StrCat(path, ": ", std::strerror(errno)));
  FILE* f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    return absl::InternalError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  setvbuf(f, nullptr, _IOLBF, 0);  // whole lines, readable while the run goes on
  return std::shared_ptr<TraceWriter>(new TraceWriter(f, ts, true));
}

TraceWriter::~TraceWriter() {
  if (owned_) std::fclose(out_);
}

std::string TraceWriter::Leader(pid_t tid) const {
  std::string out;
  if (owned_) {
    out = absl::StrFormat("%-5d ", tid);
  } else if (tasks_ > 1) {
    out = absl::StrFormat("[pid %5d] ", tid);
  }
  if (ts_ == Timestamps::kNone) return out;
  timeval tv;
  gettimeofday(&tv, nullptr);
  if (ts_ == Timestamps::kUnix) {
    return absl::StrCat(out, absl::StrFormat("%d.%06d ", tv.tv_sec, tv.tv_usec));
  }
  struct tm tm;
  localtime_r(&tv.tv_sec, &tm);
  char hms[16];
  strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
  if (ts_ == Timestamps::kSeconds) return absl::StrCat(out, hms, " ");
  return absl::StrCat(out, hms, absl::StrFormat(".%06d ", tv.tv_usec));
}

void TraceWriter::Write(std::string line) { lines_.Write(line); }

void TraceWriter::Syscall(pid_t tid, const TracedCall& call, GuestMemory* mem) {
  Call(tid, FormatCall(call, mem), FormatReturn(call));  // formatted before the lock
}

void TraceWriter::Call(pid_t tid, const std::string& call, const std::string& ret) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string line = Leader(tid) + call;
  if (line.size() < kResultColumn) line.append(kResultColumn - line.size(), ' ');
  absl::StrAppend(&line, " = ", ret);
  Write(std::move(line));
}

void TraceWriter::Unfinished(pid_t tid, const std::string& name, const std::string& args) {
  std::lock_guard<std::mutex> lock(mu_);
  Write(absl::StrCat(Leader(tid), name, "(", args, args.empty() ? "" : " ", "<unfinished ...>"));
}

void TraceWriter::Resumed(pid_t tid, const std::string& name, const std::string& ret) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string line = absl::StrCat(Leader(tid), "<... ", name, " resumed>)");
  if (line.size() < kResultColumn) line.append(kResultColumn - line.size(), ' ');
  absl::StrAppend(&line, " = ", ret);
  Write(std::move(line));
}

void TraceWriter::Event(pid_t tid, const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  Write(Leader(tid) + text);
}

void TraceWriter::TaskStarted() {
  std::lock_guard<std::mutex> lock(mu_);
  ++tasks_;
}

void TraceWriter::TaskEnded() {
  std::lock_guard<std::mutex> lock(mu_);
  if (tasks_ > 0) --tasks_;
}

}  // namespace sentry::trace
