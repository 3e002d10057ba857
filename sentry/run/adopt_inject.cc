// The adopted child made whole before its first instruction (adopt.h):
// calls run inside it by its new supervisor (platform/inject_syscall.h, the
// re-listen's own mechanism), its registers restored after each.
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <span>
#include <thread>

#include "absl/strings/str_cat.h"
#include "loader/prebuilt_filter.h"
#include "sentry/abi/guest_memory.h"
#include "sentry/base/fs_identity.h"
#include "sentry/base/timeline.h"
#include "sentry/kernel/guest_proc.h"
#include "sentry/platform/inject_syscall.h"
#include "sentry/run/adopt_internal.h"
#include "syscalls/table.h"

namespace sentry::adopt {
namespace {

constexpr uint64_t kRedZone = 128;  // below rsp: the x86-64 ABI's red zone is the guest's
constexpr int kMaxChildFds = 1 << 16;

struct ChildFprog {  // sock_fprog as the child's (x86-64) memory holds it
  uint16_t len;
  uint16_t pad[3];
  uint64_t filter;
};

// The child's fds and whether each is close-on-exec (from fdinfo's
// flags), through the guest's /proc opener (on a subordinate range its fd/
// and fdinfo/ are the guest uid's alone). nullopt when they cannot be read:
// an fd left unreplaced would be the parent's in the child.
std::optional<std::vector<std::pair<int, bool>>> ChildFds(GuestProcOpener& opener, pid_t pid) {
  std::optional<std::vector<int>> fds = GuestFdNumbers(opener, pid, kMaxChildFds);
  if (!fds) return std::nullopt;
  std::vector<std::pair<int, bool>> out;
  for (int fd : *fds) {
    UniqueFd info = opener.Open(pid, absl::StrCat("fdinfo/", fd));
    char text[512];
    ssize_t n = info ? read(info.get(), text, sizeof(text) - 1) : -1;
    if (n <= 0) return std::nullopt;
    text[n] = '\0';
    const char* flags = std::strstr(text, "flags:");
    if (!flags) return std::nullopt;
    bool cloexec = (std::strtoul(flags + 6, nullptr, 8) & O_CLOEXEC) != 0;
    out.emplace_back(fd, cloexec);
  }
  return out;
}

}  // namespace

// The clone that made the child's user namespace gave it every capability
// there (kernel/user_namespace.c, set_cred_user_ns), so it could become any
// id the sandbox maps (set*id run natively): the sandbox's root, which a
// subordinate range maps to the caller. It gets none, as its parent has
// none: capset to empty sets (header and data written below the red zone,
// the bytes there given back), checked in its status after.
std::optional<std::string> Adoption::DropCapabilities(GuestMemory& mem,
                                                      const user_regs_struct& at) {
  struct ChildCaps {  // __user_cap_header_struct, then two __user_cap_data_struct
    uint32_t version = _LINUX_CAPABILITY_VERSION_3;
    int32_t pid = 0;
    uint32_t data[6] = {};
  } caps;
  uint64_t addr = (at.rsp - kRedZone - sizeof(ChildCaps)) & ~uint64_t{15};
  ChildCaps saved;
  if (!mem.CopyIn(GuestAddr(addr), &saved, sizeof(saved)).ok() ||
      !mem.CopyOutValue(GuestAddr(addr), caps).ok()) {
    return "the child's stack has no room for its capabilities";
  }
  Injected set = InjectSyscall(child_, at, SYS_capset, {addr, addr + 8, 0, 0, 0, 0}, held_);
  bool restored = mem.CopyOutValue(GuestAddr(addr), saved).ok();
  if (set.gone || set.ret != 0) {
    return absl::StrCat("the child's capset failed: ", std::strerror(static_cast<int>(-set.ret)));
  }
  if (!restored) return "cannot restore the child's stack";
  std::ifstream status(absl::StrCat("/proc/", child_, "/status"));
  std::string line;
  int none = 0;
  while (std::getline(status, line)) {
    for (const char* set_name : {"CapInh:", "CapPrm:", "CapEff:", "CapAmb:"}) {
      if (line.rfind(set_name, 0) == 0 && std::strtoull(line.c_str() + 7, nullptr, 16) == 0) {
        ++none;
      }
    }
  }
  if (none != 4) return "the child kept capabilities";
  return std::nullopt;
}

std::optional<std::string> Adoption::MakeWhole() {
  user_regs_struct at;
  if (ptrace(PTRACE_GETREGS, child_, nullptr, &at) < 0) return "cannot read the child's registers";
  // setsid: out of the parent's session and process group (a group kill of
  // the parent's must not reach it).
  Injected sid = InjectSyscall(child_, at, SYS_setsid, {}, held_);
  if (sid.gone || sid.ret <= 0) return absl::StrCat("the child's setsid failed (", sid.ret, ")");
  ProcessMemoryBackend backend(child_);
  GuestMemory mem(backend);
  if (auto e = DropCapabilities(mem, at)) return e;
  // Its own filter (the sandbox's table) with a listener: the program and
  // its sock_fprog written below the red zone, the bytes there given back
  // after.
  std::span<const sock_filter> prog = PrebuiltSeccompFilter();
  size_t bytes = prog.size() * sizeof(sock_filter);
  uint64_t fprog_addr = (at.rsp - kRedZone - sizeof(ChildFprog)) & ~uint64_t{15};
  uint64_t prog_addr = (fprog_addr - bytes) & ~uint64_t{15};
  size_t span = at.rsp - kRedZone - prog_addr;
  std::vector<char> saved(span);
  if (!mem.CopyIn(GuestAddr(prog_addr), saved.data(), span).ok()) {
    return "the child's stack has no room for its filter";
  }
  ChildFprog fprog{static_cast<uint16_t>(prog.size()), {}, prog_addr};
  if (!mem.CopyOut(GuestAddr(prog_addr), prog.data(), bytes).ok() ||
      !mem.CopyOutValue(GuestAddr(fprog_addr), fprog).ok()) {
    return "cannot write the child's filter";
  }
  Injected listener = InjectSyscall(
      child_, at, SYS_seccomp,
      {SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, fprog_addr, 0, 0, 0}, held_);
  bool restored = mem.CopyOut(GuestAddr(prog_addr), saved.data(), span).ok();
  if (listener.gone || listener.ret < 0) {
    return absl::StrCat("the child's seccomp failed: ",
                        std::strerror(static_cast<int>(-listener.ret)));
  }
  if (!restored) return "cannot restore the child's stack";
  int guest_fd = static_cast<int>(listener.ret);
  UniqueFd l2(static_cast<int>(syscall(SYS_pidfd_getfd, pidfd_.get(), guest_fd, 0)));
  Injected closed =
      InjectSyscall(child_, at, SYS_close, {static_cast<uint64_t>(guest_fd), 0, 0, 0, 0, 0}, held_);
  if (!l2 || closed.gone || closed.ret != 0) return "cannot take the child's listener";
  timeline::Mark("s2.listener");
  unotify_ = std::make_unique<Unotify>(std::move(l2));
  if (auto e = ReplaceFds(at)) return e;
  timeline::Mark("s2.fds");
  // In its cgroups before it runs an instruction of its own.
  FinishCgroupJoin();
  // The child's own registers: its clone returns 0.
  if (ptrace(PTRACE_SETREGS, child_, nullptr, &at) < 0) return "cannot restore the child";
  unotify_->SetSyncWakeup();
  dispatcher_ = std::make_unique<Dispatcher>(nullptr, &FindSyscall);
  loop_ = std::make_unique<NotifyLoop>(*kernel_, *unotify_, *dispatcher_, fs_uid_);
  loop_->Start();
  stdio_.Start();
  if (!DropFsIdentity(fs_uid_, fs_gid_)) return "cannot take an unprivileged file identity";
  // The signals that came before it ran (only the parent's side could name
  // it then) are dropped, not delivered: none crosses from the parent. (One
  // the child blocks stays pending, unseen here: not flushed.)
  held_.clear();
  if (ptrace(PTRACE_CONT, child_, nullptr, nullptr) < 0) return "cannot resume the child";
  return std::nullopt;
}

std::optional<std::string> Adoption::ReplaceFds(const user_regs_struct& at) {
  UniqueFd null(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null) return "cannot open /dev/null";
  {
    // The guest's own to fstat, as a run's stdio is (not a file of the VFS).
    struct stat st;
    std::lock_guard<std::mutex> lock(kernel_->mu());
    if (fstat(null.get(), &st) == 0) kernel_->fds().TrustCallerObject(st);
  }
  std::string error;
  // The notification of the trapped call below, answered here (the child
  // waits in it while its fds are replaced in place).
  std::thread serve([&] {
    pollfd p{unotify_->fd(), POLLIN, 0};
    seccomp_notif req{};
    if (poll(&p, 1, 5000) <= 0 || unotify_->Receive(&req) != 0) {
      error = "the child's first trapped call never came";
      SendSignal(SIGKILL);
      return;
    }
    // S1's relay pipes become this supervisor's own; every other fd is
    // /dev/null (reopening the parent's files from the copy is not built).
    std::array<int, 3> ours = stdio_.child_fds();
    auto fds = ChildFds(kernel_->proc_opener(), child_);
    if (!fds) {
      error = absl::StrCat("cannot list the child's fds: ", std::strerror(errno));
      SendSignal(SIGKILL);
      return;
    }
    for (const auto& [fd, cloexec] : *fds) {
      int src = null.get();
      for (const auto& [relay_fd, role] : header_.relay) {
        if (relay_fd == fd && ours[role] >= 0) src = ours[role];
      }
      if (unotify_->AddFdAt(req.id, src, fd, cloexec) < 0) {
        error = absl::StrCat("cannot replace the child's fd ", fd);
        SendSignal(SIGKILL);
        break;
      }
    }
    unotify_->Respond(req.id, 0, 0);
  });
  Injected trapped = InjectSyscall(child_, at, SYS_getcwd, {}, held_);
  serve.join();
  if (!error.empty()) return error;
  if (trapped.gone) return "the child ended while its fds were replaced";
  return std::nullopt;
}

}  // namespace sentry::adopt
