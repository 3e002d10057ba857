#include "sentry/agent/service.h"

#include <malloc.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/base/log.h"
#include "sentry/base/sha256.h"
#include "sentry/run/audit_log.h"
#include "sentry/session/session_manager.h"

namespace sentry::agent {
namespace {

// The largest result a runner accepts (cold_runner.cc).
constexpr uint64_t kMaxRunnerResult = 64 << 20;

using nlohmann::json;

std::string Outcome(const json& r) {
  if (!r.value("error", json()).is_null()) return "error";
  if (r.value("timedOut", false)) return "timeout";
  if (!r.value("limit", json()).is_null()) return "limit";
  return r.value("exitCode", -1) == 0 ? "ok" : "failed";
}

}  // namespace

AgentService::AgentService(ServerFlags flags, std::unique_ptr<Runner> runner)
    : flags_(std::move(flags)), runner_(std::move(runner)) {
  // A result's buffers (megabytes) are allocated on the thread of its
  // connection or call. With glibc's dynamic threshold, once one was freed
  // the next come from that thread's arena and stay there: four threads,
  // one after another, held four results' worth of RSS. A fixed threshold
  // keeps buffers past 1 MiB in mmaps of their own, given back at free.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
}

bool AgentService::Acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  if (draining_ || (running_ >= flags_.max_concurrent && waiting_ >= flags_.max_queue)) {
    return false;
  }
  ++waiting_;
  metrics_.queued = waiting_;
  cv_.wait(lock, [&] { return running_ < flags_.max_concurrent || draining_; });
  --waiting_;
  metrics_.queued = waiting_;
  if (draining_) {
    cv_.notify_all();
    return false;
  }
  ++running_;
  metrics_.in_flight = running_;
  return true;
}

void AgentService::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  --running_;
  metrics_.in_flight = running_;
  cv_.notify_all();
}

bool AgentService::Reserve(uint64_t bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return reserved_ + bytes <= flags_.result_memory || draining_; });
  if (reserved_ + bytes > flags_.result_memory) return false;
  reserved_ += bytes;
  return true;
}

void AgentService::Unreserve(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  reserved_ -= bytes;
  cv_.notify_all();
}

void AgentService::Drain() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = true;
  cv_.notify_all();
}

void AgentService::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return running_ == 0 && waiting_ == 0; });
}

AgentService::Answer AgentService::Run(const json& request, bool stream, OutputSink* sink,
                                       int cancel_fd) {
  Answer a;
  RunJob job;
  RequestError err;
  bool parsed = false;
  try {  // a field of an unexpected type that a check missed: 400, not a crash
    parsed = ParseRunRequest(request, flags_.policy, stream, &job, &err);
  } catch (const json::exception& e) {
    err = RequestError{400, "", absl::StrCat("malformed request: ", e.what())};
  }
  if (!parsed) {
    metrics_.RecordRejected(err.http_status == 413 ? "too_large" : "bad_request");
    a.status = err.http_status;
    a.body = err.Json();
    return a;
  }
  job.cancel_fd = cancel_fd;
  const RunOptions& o = job.options;
  uint64_t files = o.return_files.empty() ? 0 : (o.return_total_max / 3 + 1) * 4;
  uint64_t most = std::min<uint64_t>(kMaxRunnerResult, files + 12 * o.max_output + (64 << 10));
  if (most > flags_.result_memory) {
    metrics_.RecordRejected("too_large");
    a.status = 413;
    a.body = RequestError{413, o.return_files.empty() ? "" : "returnFiles",
                          absl::StrCat("the result could be ", most,
                                       " bytes, more than the server holds at once (",
                                       flags_.result_memory, ", --result-memory)")}
                 .Json();
    return a;
  }
  if (!Reserve(most)) {
    a.status = 503;
    a.body = RequestError{503, "", "the server is shutting down"}.Json();
    return a;
  }
  a.memory = std::shared_ptr<void>(nullptr, [this, most](void*) { Unreserve(most); });
  pollfd cancelled{cancel_fd, POLLIN, 0};
  if (cancel_fd >= 0 && poll(&cancelled, 1, 0) > 0) {  // while it waited for a slot
    a.status = 499;
    a.body = RequestError{499, "", "the call was cancelled"}.Json();
    return a;
  }
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<RunOutcome> out = runner_->Run(job, stream ? sink : nullptr);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!out.ok()) {
    metrics_.RecordRun("error", seconds, 0);
    a.status = 500;
    a.body = RequestError{500, "", std::string(out.status().message())}.Json();
    return a;
  }
  try {
    a.result = json::parse(out->result_json);
  } catch (const json::exception& e) {
    a.status = 500;
    a.body = RequestError{500, "", "the run's result is not JSON"}.Json();
    return a;
  }
  metrics_.RecordRun(Outcome(a.result), seconds, a.result.value("denied", json::array()).size());
  if (!flags_.log_path.empty()) Log(job, out->result_json);
  a.body = std::move(out->result_json);
  return a;
}

std::string AgentService::MetricsText() const {
  std::string text = metrics_.Text(runner_->Ready(), runner_->WarmRuns());
  if (sessions_) text += sessions_->MetricsText();
  return text;
}

void AgentService::Log(const RunJob& job, const std::string& result_json) {
  static std::atomic<uint64_t> next{0};
  const RunOptions& o = job.options;
  AuditRecord rec;
  rec.run_id = absl::StrFormat("serve-%d-%d", getpid(), next++);
  rec.argv = o.argv;
  if (!job.code.empty()) {
    rec.code = job.code.substr(0, 64 << 10);
    rec.code_hash = Sha256Hex(job.code);
  }
  rec.limits = LimitsJson(o);
  rec.result_json = result_json;
  rusage self;
  if (getrusage(RUSAGE_SELF, &self) == 0) {
    rec.sentry_max_rss_bytes = static_cast<uint64_t>(self.ru_maxrss) * 1024;
  }
  if (absl::Status s = AppendAuditRecord(flags_.log_path, rec); !s.ok()) {
    log::Error(std::string(s.message()));
  }
}

}  // namespace sentry::agent
