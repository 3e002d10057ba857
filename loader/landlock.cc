#include "loader/landlock.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

#include "absl/strings/str_cat.h"

namespace sentry {
namespace {

// The uapi of <linux/landlock.h> as of ABI 7, spelled here: Debian 12's
// headers stop at ABI 3.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};
constexpr int kSysCreateRuleset = 444, kSysAddRule = 445, kSysRestrictSelf = 446;
constexpr uint32_t kCreateRulesetVersion = 1;
constexpr int kRulePathBeneath = 1;

constexpr uint64_t kExecute = 1ull << 0;
constexpr uint64_t kWriteFile = 1ull << 1;
constexpr uint64_t kReadFile = 1ull << 2;
constexpr uint64_t kRefer = 1ull << 13;     // ABI 2
constexpr uint64_t kTruncate = 1ull << 14;  // ABI 3
constexpr uint64_t kIoctlDev = 1ull << 15;  // ABI 5
constexpr uint64_t kAbi1Fs = (1ull << 13) - 1;
constexpr uint64_t kBindTcp = 1ull << 0, kConnectTcp = 1ull << 1;             // ABI 4
constexpr uint64_t kScopeAbstractUnix = 1ull << 0, kScopeSignal = 1ull << 1;  // ABI 6

// Runs on the guest's stack between clone and execve: not instrumented (see
// LOADER_CODE in loader.cc).
#define LANDLOCK_LOADER_CODE __attribute__((no_sanitize("address", "undefined")))

}  // namespace

int LandlockAbi() {
  static const int abi = [] {
    long v = syscall(kSysCreateRuleset, nullptr, 0, kCreateRulesetVersion);
    return v > 0 ? static_cast<int>(v) : 0;
  }();
  return abi;
}

std::string LandlockWallName(int abi) { return absl::StrCat("landlock-abi", abi); }

std::string LandlockRightsText(int abi) {
  if (abi <= 0) return "";
  std::string text = "no file-system right of the guest's own but exec";
  if (abi >= 4) text += ", no TCP bind or connect";
  if (abi >= 6) text += ", signals and abstract unix sockets scoped to the sandbox";
  return text + ", no ptrace out of it";
}

LandlockPlan GuestLandlockPlan(int abi, const std::vector<std::string>& exec_roots,
                               const std::string& pty_root) {
  LandlockPlan plan;
  if (abi <= 0) return plan;
  plan.abi = abi;
  plan.handled_fs = kAbi1Fs;
  if (abi >= 2) plan.handled_fs |= kRefer;
  if (abi >= 3) plan.handled_fs |= kTruncate;
  if (abi >= 5) plan.handled_fs |= kIoctlDev;
  if (abi >= 4) plan.handled_net = kBindTcp | kConnectTcp;
  if (abi >= 6) plan.scoped = kScopeAbstractUnix | kScopeSignal;
  for (const std::string& root : exec_roots) plan.rules.push_back({root, kExecute | kReadFile});
  if (!pty_root.empty()) {
    plan.rules.push_back({pty_root, (kReadFile | kWriteFile | kIoctlDev) & plan.handled_fs});
  }
  return plan;
}

LANDLOCK_LOADER_CODE int OpenMqueueRoot() {
  constexpr unsigned kFsopenCloexec = 1, kFsconfigCmdCreate = 6, kFsmountCloexec = 1;
  int fs = static_cast<int>(syscall(SYS_fsopen, "mqueue", kFsopenCloexec));
  if (fs < 0) return -1;
  int mnt = -1;
  if (syscall(SYS_fsconfig, fs, kFsconfigCmdCreate, nullptr, nullptr, 0) == 0) {
    mnt = static_cast<int>(syscall(SYS_fsmount, fs, kFsmountCloexec, 0));
  }
  syscall(SYS_close, fs);
  return mnt < 0 ? -1 : mnt;
}

LANDLOCK_LOADER_CODE int ApplyLandlock(const LandlockPlan& plan, int mqueue_root) {
  if (plan.abi <= 0) {
    if (mqueue_root >= 0) syscall(SYS_close, mqueue_root);
    return 0;
  }
  RulesetAttr attr{plan.handled_fs, plan.handled_net, plan.scoped};
  // The size of the fields this ABI has: an older kernel refuses a larger
  // struct only if the tail is not zero, but says nothing wrong either way.
  size_t size = plan.abi >= 6   ? sizeof(attr)
                : plan.abi >= 4 ? offsetof(RulesetAttr, scoped)
                                : offsetof(RulesetAttr, handled_access_net);
  int ruleset = static_cast<int>(syscall(kSysCreateRuleset, &attr, size, 0));
  if (ruleset < 0) return errno;
  int err = 0;
  for (const LandlockPlan::Rule& rule : plan.rules) {
    int dir = static_cast<int>(
        syscall(SYS_openat, AT_FDCWD, rule.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0));
    if (dir < 0) {
      if (errno == ENOENT) continue;
      err = errno;
      break;
    }
    PathBeneathAttr beneath{rule.access, dir};
    long r = syscall(kSysAddRule, ruleset, kRulePathBeneath, &beneath, 0);
    if (r < 0) err = errno;
    syscall(SYS_close, dir);
    if (err) break;
  }
  if (err == 0 && mqueue_root >= 0) {
    PathBeneathAttr beneath{kReadFile | kWriteFile, mqueue_root};
    if (syscall(kSysAddRule, ruleset, kRulePathBeneath, &beneath, 0) < 0) err = errno;
  }
  if (mqueue_root >= 0) syscall(SYS_close, mqueue_root);
  if (err == 0 && syscall(kSysRestrictSelf, ruleset, 0) < 0) err = errno;
  syscall(SYS_close, ruleset);
  return err;
}

}  // namespace sentry
