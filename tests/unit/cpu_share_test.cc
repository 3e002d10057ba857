// CpuShare: the token bucket that bounds the sentry's CPU on a sandbox's calls.
#include "sentry/kernel/cpu_share.h"

#include <time.h>

#include "gtest/gtest.h"

namespace sentry {
namespace {

constexpr uint64_t kMs = 1000000;

TEST(CpuShareTest, NoWaitWithinTheBurst) {
  CpuShare share;
  share.set_share(0.05);
  share.Charge(CpuShare::kBurstNs / 2);
  EXPECT_EQ(share.WaitNs(), 0u);
  EXPECT_EQ(share.spent_ns(), CpuShare::kBurstNs / 2);
}

// In debt, the wait is the debt over the rate (2 x the share): 10 ms over
// the burst at 0.05 CPU is 100 ms.
TEST(CpuShareTest, DebtIsPaidBackAtTwiceTheShare) {
  CpuShare share;
  share.set_share(0.05);
  share.Charge(CpuShare::kBurstNs + 10 * kMs);
  uint64_t wait = share.WaitNs();
  EXPECT_GT(wait, 90 * kMs);
  EXPECT_LE(wait, 101 * kMs);
}

TEST(CpuShareTest, WithoutCpusTheShareIsOneCpu) {
  CpuShare share;
  share.set_share(0);
  share.Charge(CpuShare::kBurstNs + 10 * kMs);
  uint64_t wait = share.WaitNs();  // 10 ms at 2 CPUs: 5 ms
  EXPECT_GT(wait, 4 * kMs);
  EXPECT_LE(wait, 5 * kMs + 1);
}

TEST(CpuShareTest, WaitingRefillsTheBudget) {
  CpuShare share;
  share.set_share(1);
  share.Charge(CpuShare::kBurstNs + 2 * kMs);  // 1 ms to wait at 2 CPUs
  uint64_t wait = share.WaitNs();
  ASSERT_GT(wait, 0u);
  timespec ts{0, static_cast<long>(wait)};
  nanosleep(&ts, nullptr);
  EXPECT_EQ(share.WaitNs(), 0u);
}

TEST(CpuShareTest, RestartForgetsTheDebtAndTheCounts) {
  CpuShare share;
  share.set_share(0.05);
  share.Charge(CpuShare::kBurstNs * 3);
  share.AddThrottled(5 * kMs);
  ASSERT_GT(share.WaitNs(), 0u);
  share.Restart(0.5);
  EXPECT_EQ(share.WaitNs(), 0u);
  EXPECT_EQ(share.spent_ns(), 0u);
  EXPECT_EQ(share.throttled_ns(), 0u);
}

}  // namespace
}  // namespace sentry
