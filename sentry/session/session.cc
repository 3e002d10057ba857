#include "sentry/session/session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/agent/json_bounded.h"
#include "sentry/base/json_out.h"
#include "sentry/base/timeline.h"
#include "sentry/session/session_memory.h"

namespace sentry::session {
namespace {

using nlohmann::json;
using Ordered = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxMessages = 4 << 10;  // the supervisor's last words kept
constexpr size_t kMaxLogLine = 4 << 20;   // its --log line (argv holds the kernel)
constexpr int kWriteTimeoutMs = 10000;    // a kernel that stops reading its requests

pid_t PidOf(int pidfd) {
  std::ifstream f(absl::StrCat("/proc/self/fdinfo/", pidfd));
  std::string line;
  while (std::getline(f, line)) {
    int pid = 0;
    if (line.rfind("Pid:", 0) == 0 && absl::SimpleAtoi(line.substr(4), &pid)) return pid;
  }
  return -1;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

const char* ReasonName(EndReason reason) {
  switch (reason) {
    case EndReason::kNone:
      return "";
    case EndReason::kIdle:
      return "idle";
    case EndReason::kLifetime:
      return "lifetime";
    case EndReason::kMemory:
      return "memory";
    case EndReason::kCrashed:
      return "crashed";
    case EndReason::kDeleted:
      return "deleted";
    case EndReason::kShutdown:
      return "shutdown";
    case EndReason::kTimeout:
      return "timeout";
  }
  return "";
}

int64_t NowUnixMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string IsoTime(int64_t unix_ms) {
  time_t secs = static_cast<time_t>(unix_ms / 1000);
  tm t;
  gmtime_r(&secs, &t);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.tm_year + 1900, t.tm_mon + 1,
                         t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                         static_cast<int>(unix_ms % 1000));
}

Ordered Ended::Json() const {
  Ordered j = {{"reason", ReasonName(reason)}, {"at", IsoTime(at_unix_ms)}};
  if (!detail.empty()) j["detail"] = JsonText(detail);
  return j;
}

absl::StatusOr<std::shared_ptr<Session>> Session::Launch(SandboxLauncher& launcher,
                                                         const SandboxSpec& spec) {
  absl::StatusOr<SandboxProcess> p = launcher.Launch(spec);
  if (!p.ok()) return p.status();
  std::shared_ptr<Session> s(new Session(std::move(*p)));
  s->spec_ = spec;
  s->spec_.adopt_fd = -1;  // borrowed: the launch has passed its copy
  s->reader_ = std::thread([raw = s.get()] { raw->ReadLoop(); });
  return s;
}

Session::Session(SandboxProcess process) : process_(std::move(process)) {
  supervisor_pid_ = PidOf(process_.pidfd.get());
  claimed_ = last_used_ = Clock::now();
  claimed_unix_ms_ = NowUnixMs();
  // Writes wait with a deadline (Send), never forever on a kernel that
  // stopped reading.
  fcntl(process_.requests.get(), F_SETFL, O_NONBLOCK);
}

Session::~Session() {
  End(EndReason::kShutdown);
  if (reader_.joinable()) reader_.join();
}

bool Session::WaitReady(double timeout_sec, std::string* why) {
  std::unique_lock<std::mutex> lock(mu_);
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(timeout_sec));
  cv_.wait_until(lock, deadline, [&] { return ready_ || ended_.has_value(); });
  if (ready_ && !ended_) return true;
  if (!ended_) EndLocked(EndReason::kCrashed, "the kernel did not start in time");
  // The first reason, or what the supervisor said once it is gone.
  cv_.wait_until(lock, Clock::now() + std::chrono::seconds(5), [&] { return gone_; });
  *why = absl::StrCat("the session's kernel did not start: ", ended_->detail);
  return false;
}

void Session::Claim(const SessionTerms& terms) {
  std::lock_guard<std::mutex> lock(mu_);
  terms_ = terms;
  claimed_ = last_used_ = Clock::now();
  claimed_unix_ms_ = NowUnixMs();
}

bool Session::Send(const json& op) {
  std::string frame = EncodeFrame(op);
  std::lock_guard<std::mutex> lock(send_mu_);
  size_t done = 0;
  auto deadline = Clock::now() + std::chrono::milliseconds(kWriteTimeoutMs);
  while (done < frame.size()) {
    ssize_t n = write(process_.requests.get(), frame.data() + done, frame.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{process_.requests.get(), POLLOUT, 0};
    poll(&p, 1, static_cast<int>(left.count()));
  }
  return true;
}

void Session::EndLocked(EndReason reason, std::string detail) {
  if (ended_ && sandbox_kept_) {  // its forked sessions are gone: now the sandbox
    sandbox_kept_ = false;
    if (!gone_) syscall(SYS_pidfd_send_signal, process_.pidfd.get(), SIGTERM, nullptr, 0);
    cv_.notify_all();
    return;
  }
  if (ended_) return;
  ended_ = Ended{reason, NowUnixMs(), std::move(detail)};
  // SIGTERM ends the supervisor's run as it ends `sentry run`: the guest is
  // told, then killed; the reader sends it again until the sandbox is gone.
  if (!gone_) syscall(SYS_pidfd_send_signal, process_.pidfd.get(), SIGTERM, nullptr, 0);
  cv_.notify_all();
}

void Session::EndKeepingSandbox(EndReason reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  ended_ = Ended{reason, NowUnixMs(), ""};
  sandbox_kept_ = true;
  cv_.notify_all();
}

void Session::End(EndReason reason) {
  std::lock_guard<std::mutex> lock(mu_);
  EndLocked(reason, "");
}

bool Session::WaitGone(double timeout_sec) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::duration<double>(timeout_sec), [&] { return gone_; });
}

void Session::ReadLoop() {
  FrameReader reader;
  std::vector<json> frames;
  std::array<int, 3> fds = {process_.frames.get(), process_.messages.get(), process_.log.get()};
  std::array<bool, 3> open = {true, true, true};
  std::vector<char> buf(1 << 16);
  while (open[0] || open[1] || open[2]) {
    pollfd p[3];
    for (int i = 0; i < 3; ++i) p[i] = {open[i] ? fds[i] : -1, POLLIN, 0};
    bool ending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ending = ended_.has_value() && !sandbox_kept_;
    }
    int r = poll(p, 3, ending ? 100 : -1);
    if (r < 0 && errno != EINTR) break;
    if (r == 0 && ending) {  // the first SIGTERM may have met a sandbox still starting
      syscall(SYS_pidfd_send_signal, process_.pidfd.get(), SIGTERM, nullptr, 0);
      continue;
    }
    for (int i = 0; i < 3; ++i) {
      if (!open[i] || !p[i].revents) continue;
      ssize_t n = read(fds[i], buf.data(), buf.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        open[i] = false;
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (i == 1) {
        messages_.append(buf.data(), static_cast<size_t>(n));
        if (messages_.size() > kMaxMessages) messages_.erase(0, messages_.size() - kMaxMessages);
      } else if (i == 2) {
        if (log_line_.size() < kMaxLogLine) log_line_.append(buf.data(), static_cast<size_t>(n));
      } else {
        frames.clear();
        std::string why;
        bool ok = reader.Feed(buf.data(), static_cast<size_t>(n), &frames, &why);
        for (const json& f : frames) OnFrame(f);
        if (!ok) EndLocked(EndReason::kCrashed, absl::StrCat("a bad frame from the kernel: ", why));
      }
    }
  }
  Concluded();
}

void Session::OnFrame(const json& frame) {
  auto op_it = frame.find("op");
  if (op_it == frame.end() || !op_it->is_string()) return;
  const std::string& op = op_it->get_ref<const std::string&>();
  auto id_it = frame.find("id");
  uint64_t id = id_it != frame.end() && id_it->is_number_unsigned() ? id_it->get<uint64_t>() : 0;
  if (op == "ready" || op == "forked") {  // a fork's child says forked first, not ready
    if (op == "forked") timeline::Mark("srv.child.forked");
    if (auto pid = frame.find("pid"); pid != frame.end() && pid->is_number_integer()) {
      kernel_pid_ = pid->get<int64_t>();
    }
    ready_ = true;
    cv_.notify_all();
    return;
  }
  if (op == "file" || op == "files" || op == "file_error") {
    auto it = files_.find(id);
    if (it != files_.end() && !it->second) {
      it->second = frame;
      cv_.notify_all();
    }
    return;
  }
  if (forking_ && op == "done" && id == fork_id_ && !fork_done_) {
    timeline::Mark("srv.kernel.done");
    fork_done_ = frame;
    cv_.notify_all();
    return;
  }
  // A frame of another id (a cell already given up) is the guest's noise.
  if (!cell_ || cell_->id() != id || cell_->done()) return;
  if (!cell_->OnFrame(frame)) {
    EndLocked(EndReason::kCrashed, absl::StrCat("a malformed \"", op, "\" frame from the kernel"));
  }
  cv_.notify_all();
}

void Session::Concluded() {
  std::lock_guard<std::mutex> lock(mu_);
  gone_ = true;
  if (!ended_) {
    // Nobody ended it: the sandbox did. Its result says whether the cgroup's
    // memory limit was the cause.
    json line;
    std::string why;
    json result;
    if (agent::ParseBoundedJson(log_line_, kMaxLogLine, agent::kMaxJsonDepth, &line, &why) ==
            agent::JsonRefusal::kNone &&
        line.is_object() && line.contains("result") && line["result"].is_object()) {
      result = line["result"];
    }
    bool memory = result.is_object() && result.value("limit", json()) == "memory";
    std::string detail;
    if (result.is_object()) {
      detail = absl::StrCat("exit code ", result.value("exitCode", json()).dump());
      if (result.value("signal", json()).is_string()) {
        detail += absl::StrCat(", ", result["signal"].get<std::string>());
      }
    }
    // The supervisor's last line ("sentry: ...").
    std::string said = messages_;
    while (!said.empty() && said.back() == '\n') said.pop_back();
    if (size_t nl = said.rfind('\n'); nl != std::string::npos) said.erase(0, nl + 1);
    if (!said.empty()) absl::StrAppend(&detail, detail.empty() ? "" : "; ", said);
    while (!detail.empty() && detail.back() == '\n') detail.pop_back();
    ended_ = Ended{memory ? EndReason::kMemory : EndReason::kCrashed, NowUnixMs(), detail};
  }
  log_line_.clear();
  log_line_.shrink_to_fit();
  process_.requests.Reset();
  cv_.notify_all();
}

Status Session::Execute(json op, double timeout_sec, const LiveFn& live, Ordered* result) {
  std::unique_lock<std::mutex> lock(mu_);
  if (ended_) return Status::kEnded;
  if (cell_ || forking_) return Status::kBusy;
  if (timeout_sec <= 0) timeout_sec = terms_.cell_timeout_sec;
  timeout_sec = std::min(timeout_sec, terms_.max_cell_timeout_sec);
  uint64_t id = next_id_++;
  cell_ = std::make_unique<CellRecord>(id, terms_.max_output, static_cast<bool>(live));
  ++cells_;
  auto start = Clock::now();
  last_used_ = start;
  op["id"] = id;
  lock.unlock();
  bool sent = Send(op);
  lock.lock();
  if (!sent) EndLocked(EndReason::kCrashed, "the kernel stopped reading its requests");
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(timeout_sec));
  bool timed_out = false;
  while (true) {
    cv_.wait_until(lock, deadline, [&] {
      return cell_->done() || ended_.has_value() || (live && cell_->has_live());
    });
    if (live) {
      auto chunks = cell_->TakeLive();
      if (!chunks.empty()) {
        lock.unlock();
        for (const auto& [name, text] : chunks) live(name, text);
        lock.lock();
      }
    }
    if (cell_->done() || ended_) break;
    if (Clock::now() < deadline) continue;
    if (!timed_out) {
      // Interrupted first: the state stays. Ended only if the cell ignores it.
      timed_out = true;
      deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(terms_.interrupt_grace_sec));
      lock.unlock();
      bool ok = Send(json{{"op", "interrupt"}});
      lock.lock();
      if (!ok) EndLocked(EndReason::kCrashed, "the kernel stopped reading its requests");
    } else {
      EndLocked(EndReason::kTimeout,
                absl::StrFormat("a cell ran past its timeout (%gs) and ignored the interrupt for "
                                "%gs",
                                timeout_sec, terms_.interrupt_grace_sec));
    }
  }
  const char* limit = nullptr;
  if (ended_ && ended_->reason == EndReason::kMemory) limit = "memory";
  if (timed_out) limit = "timeout";
  *result = cell_->Result(timed_out, limit, Seconds(Clock::now() - start) * 1000);
  (*result)["sessionId"] = terms_.id;
  if (ended_ && !cell_->done()) {
    if ((*result)["error"].is_null()) {
      (*result)["error"] = {
          {"name", "SessionEnded"},
          {"value", absl::StrCat("the session ended: ", ReasonName(ended_->reason))},
          {"traceback", Ordered::array()}};
    }
  }
  if (ended_) (*result)["sessionEnded"] = ended_->Json();
  cell_.reset();
  last_used_ = Clock::now();
  return Status::kOk;
}

Status Session::Interrupt() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return Status::kEnded;
    last_used_ = Clock::now();
    if (!cell_) return Status::kOk;
  }
  if (!Send(json{{"op", "interrupt"}})) {
    std::lock_guard<std::mutex> lock(mu_);
    EndLocked(EndReason::kCrashed, "the kernel stopped reading its requests");
    return Status::kEnded;
  }
  return Status::kOk;
}

Status Session::FileOp(json op, double timeout_sec, json* reply) {
  std::unique_lock<std::mutex> lock(mu_);
  if (ended_) return Status::kEnded;
  uint64_t id = next_id_++;
  files_[id];
  last_used_ = Clock::now();
  op["id"] = id;
  lock.unlock();
  bool sent = Send(op);
  lock.lock();
  if (!sent) EndLocked(EndReason::kCrashed, "the kernel stopped reading its requests");
  bool answered = cv_.wait_for(lock, std::chrono::duration<double>(timeout_sec),
                               [&] { return files_[id].has_value() || ended_.has_value(); });
  std::optional<json> got = std::move(files_[id]);
  files_.erase(id);
  last_used_ = Clock::now();
  if (got) {
    *reply = std::move(*got);
    return Status::kOk;
  }
  if (ended_) return Status::kEnded;
  (void)answered;
  return Status::kTimeout;
}

EndReason Session::Expired(Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return EndReason::kNone;
  if (Seconds(now - claimed_) >= terms_.max_lifetime_sec) return EndReason::kLifetime;
  if (!cell_ && Seconds(now - last_used_) >= terms_.idle_timeout_sec) return EndReason::kIdle;
  return EndReason::kNone;
}

std::optional<Ended> Session::ended() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_;
}

bool Session::gone() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gone_;
}

std::string Session::ExpiresAt() const {
  std::lock_guard<std::mutex> lock(mu_);
  return IsoTime(claimed_unix_ms_ + static_cast<int64_t>(terms_.max_lifetime_sec * 1000));
}

Ordered Session::Info() const {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = Clock::now();
  std::optional<uint64_t> memory = SessionMemoryBytes(supervisor_pid_);
  return Ordered{{"id", terms_.id},
                 {"state", ended_  ? "ended"
                           : cell_ ? "busy"
                                   : "idle"},
                 {"ageMs", static_cast<int64_t>(Seconds(now - claimed_) * 1000)},
                 {"idleMs", cell_ ? 0 : static_cast<int64_t>(Seconds(now - last_used_) * 1000)},
                 {"memoryBytes", memory ? Ordered(*memory) : Ordered(nullptr)},
                 {"cells", cells_},
                 {"expiresAt", IsoTime(claimed_unix_ms_ +
                                       static_cast<int64_t>(terms_.max_lifetime_sec * 1000))}};
}

}  // namespace sentry::session
