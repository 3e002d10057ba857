#include "sentry/kernel/cpu_share.h"

#include <time.h>

#include <algorithm>

namespace sentry {
namespace {

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

uint64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void CpuShare::set_share(double cpus) {
  std::lock_guard<std::mutex> lock(mu_);
  Refill(MonotonicNs());
  rate_ = kMultiple * (cpus > 0 ? cpus : kDefaultShare);
}

void CpuShare::Restart(double cpus) {
  std::lock_guard<std::mutex> lock(mu_);
  rate_ = kMultiple * (cpus > 0 ? cpus : kDefaultShare);
  tokens_ns_ = kBurstNs;
  last_ns_ = MonotonicNs();
  spent_ns_ = throttled_ns_ = 0;
}

void CpuShare::Refill(uint64_t now_ns) {
  if (last_ns_ != 0 && now_ns > last_ns_) {
    double gained = static_cast<double>(now_ns - last_ns_) * rate_;
    double tokens = static_cast<double>(tokens_ns_) + gained;
    tokens_ns_ = static_cast<int64_t>(std::min(tokens, static_cast<double>(kBurstNs)));
  }
  last_ns_ = now_ns;
}

void CpuShare::Charge(uint64_t cpu_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  Refill(MonotonicNs());
  spent_ns_ += cpu_ns;
  tokens_ns_ -= static_cast<int64_t>(std::min<uint64_t>(cpu_ns, INT64_MAX / 2));
}

uint64_t CpuShare::WaitNs() {
  std::lock_guard<std::mutex> lock(mu_);
  if (tokens_ns_ >= 0) return 0;  // the common case: no clock read
  Refill(MonotonicNs());
  if (tokens_ns_ >= 0) return 0;
  return static_cast<uint64_t>(static_cast<double>(-tokens_ns_) / rate_) + 1;
}

void CpuShare::AddThrottled(uint64_t ns) {
  std::lock_guard<std::mutex> lock(mu_);
  throttled_ns_ += ns;
}

uint64_t CpuShare::spent_ns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spent_ns_;
}

uint64_t CpuShare::throttled_ns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return throttled_ns_;
}

}  // namespace sentry
