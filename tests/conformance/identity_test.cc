// The id calls a sandbox without a user namespace answers itself
// (syscalls/sys_identity.cc): they must read as the kernel's answers to an
// unprivileged process whose ids are all the same (the suite runs natively as
// uid 1000, the sandbox's uid).
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

TEST(GetresgidTest, AllThreeAreTheGid) {
  gid_t r = 7, e = 7, s = 7;
  ASSERT_SYSCALL_SUCCEEDS(getresgid(&r, &e, &s));
  EXPECT_EQ(r, getgid());
  EXPECT_EQ(e, getegid());
  EXPECT_EQ(s, getegid());
}

TEST(SetresgidTest, ToTheIdsItHasSucceeds) {
  gid_t g = getgid();
  EXPECT_SYSCALL_SUCCEEDS(setresgid(-1, -1, -1));
  EXPECT_SYSCALL_SUCCEEDS(setresgid(g, g, g));
  EXPECT_EQ(getegid(), g);
}

TEST(SetresgidTest, ToAnotherIdIsNotPermitted) {
  SKIP_IF_ROOT();
  constexpr long kNobody = 65534;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_setresgid, -1L, kNobody, -1L), EPERM);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_setresgid, kNobody, kNobody, kNobody), EPERM);
  EXPECT_EQ(getegid(), getgid());
}

// They return the former id whether or not they change it; -1 changes
// nothing, so two calls in a row read the id.
TEST(SetfsuidTest, ReturnsTheFormerIdAndKeepsIt) {
  EXPECT_EQ(syscall(SYS_setfsuid, -1L), geteuid());
  EXPECT_EQ(syscall(SYS_setfsuid, static_cast<long>(geteuid())), geteuid());
  EXPECT_EQ(syscall(SYS_setfsuid, -1L), geteuid());
}

TEST(SetfsgidTest, ReturnsTheFormerIdAndKeepsIt) {
  EXPECT_EQ(syscall(SYS_setfsgid, -1L), getegid());
  EXPECT_EQ(syscall(SYS_setfsgid, static_cast<long>(getegid())), getegid());
  EXPECT_EQ(syscall(SYS_setfsgid, -1L), getegid());
}

// Needs CAP_SETGID: refused before the list is even read.
TEST(SetgroupsTest, WithoutCapSetgidIsNotPermitted) {
  SKIP_IF_ROOT();
  gid_t none[1] = {0};
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_setgroups, 0L, nullptr), EPERM);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_setgroups, 1L, none), EPERM);
  EXPECT_EQ(getgroups(0, nullptr), 0);
}

// A process without capabilities holds none of any set.
TEST(CapgetTest, TheCallerHoldsNoCapability) {
  SKIP_IF_ROOT();
  __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  for (auto& d : data) d = {~0u, ~0u, ~0u};
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_capget, &hdr, data));
  for (const auto& d : data) {
    EXPECT_EQ(d.effective, 0u);
    EXPECT_EQ(d.permitted, 0u);
    EXPECT_EQ(d.inheritable, 0u);
  }
  hdr = {_LINUX_CAPABILITY_VERSION_3, getpid()};
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_capget, &hdr, data));
}

// An unknown version has the kernel's preferred one written back (how libcap
// probes it): EINVAL when data was asked for, success when it was not.
TEST(CapgetTest, AnUnknownVersionIsAnsweredWithThePreferredOne) {
  __user_cap_header_struct hdr = {0x12345678, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_capget, &hdr, data), EINVAL);
  EXPECT_EQ(hdr.version, static_cast<uint32_t>(_LINUX_CAPABILITY_VERSION_3));
  hdr.version = 0x12345678;
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_capget, &hdr, nullptr));
  EXPECT_EQ(hdr.version, static_cast<uint32_t>(_LINUX_CAPABILITY_VERSION_3));
}

TEST(CapgetTest, BadHeaderPointerFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_capget, UnmappedAddress(), nullptr), EFAULT);
}

}  // namespace
}  // namespace sentry::conformance
