// The calls the rule of the pools traps (DESIGN.md): io_setup, whose events
// count against a host-wide pool, and sync/syncfs, which would flush the
// host's file systems.
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "loader/pool_caps.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

// The sandbox's AIO budget: a share of fs.aio-max-nr, the host's ceiling on
// fs.aio-nr, which every io_setup on the host draws from.
uint64_t AioBudget() {
  static const uint64_t budget = [] {
    uint64_t max = 65536;
    std::ifstream f("/proc/sys/fs/aio-max-nr");
    f >> max;
    return std::max<uint64_t>(max / kHostPoolShares, 1);
  }();
  return budget;
}

// What the sandbox's processes hold: the kernel charges a context the
// nr_events asked for (fs/aio.c, ioctx_alloc), and its ring, which maps as
// "[aio]", holds at least 2 * max(nr_events, 4 * cpus) events of 32 bytes:
// a 64th of the ring's size bounds the charge from above.
uint64_t AioEventsHeld(Kernel& k) {
  uint64_t held = 0;
  for (const auto& [tgid, process] : k.tasks().Processes()) {
    std::ifstream maps(absl::StrCat("/proc/", tgid, "/maps"));
    std::string line;
    while (std::getline(maps, line)) {
      if (line.find("/[aio]") == std::string::npos) continue;
      uint64_t start = std::strtoull(line.c_str(), nullptr, 16);
      size_t dash = line.find('-');
      if (dash == std::string::npos) continue;
      uint64_t end = std::strtoull(line.c_str() + dash + 1, nullptr, 16);
      if (end > start) held += (end - start) / 64;
    }
  }
  return held;
}

// io_setup calls let run and perhaps not yet in the maps: by host tid. An
// entry stays until its thread is seen outside io_setup (then its ring, if
// it got one, is in the maps), so it is counted twice rather than not at all.
struct InFlight {
  const Kernel* kernel;
  uint64_t events;
};
std::mutex in_flight_mu;
std::map<pid_t, InFlight> in_flight;

// The last scan of each sandbox's rings (guarded by in_flight_mu): a guest that calls io_setup in a
// loop past its share is refused from it for 100 ms, without a scan of all
// its processes' maps each time (never allowed from it: a refusal only).
struct Scan {
  uint64_t held = 0;
  std::chrono::steady_clock::time_point at;
};
std::map<const Kernel*, Scan> last_scan;
constexpr auto kScanReuse = std::chrono::milliseconds(100);

// Whether host thread tid may still be inside io_setup: it exists and is
// running or blocked in syscall 206 (/proc/TID/syscall, 0400: a thread of
// k's opened through its GuestProcOpener; another sandbox's, which may
// have ended, as the sentry itself).
bool MayBeInIoSetup(Kernel* k, pid_t tid) {
  std::string text;
  if (k) {
    UniqueFd f = k->proc_opener().Open(tid, "syscall");
    char buf[64];
    ssize_t n = f ? read(f.get(), buf, sizeof(buf) - 1) : -1;
    if (n > 0) text.assign(buf, static_cast<size_t>(n));
  } else {
    std::ifstream f(absl::StrCat("/proc/", tid, "/syscall"));
    std::getline(f, text);
  }
  std::string first = text.substr(0, text.find_first_of(" \n"));
  return first == "running" || first == "206";
}

}  // namespace

// io_setup(nr_events, ctxp). The decision reads nr_events, a register, and
// the sandbox's own state; never guest memory. So the kernel may run the
// call as it is (SECCOMP_USER_NOTIF_FLAG_CONTINUE): what it then reads (that
// *ctxp is 0) and writes (the new context) plays no part in the decision,
// and no later change of guest memory can enlarge what was allowed. The
// sentry cannot make the context itself: it belongs to the caller's mm.
SysResult<uint64_t> IoSetup(SyscallContext& ctx) {
  uint64_t nr = ctx.args.Uint(0);
  if (nr == 0 || nr > AioBudget()) {
    if (nr == 0) {  // the kernel's EINVAL, after its EFAULT check of ctxp
      ctx.let_kernel_run = true;
      return 0;
    }
    ctx.hint =
        absl::StrCat("io_setup of ", nr, " events: above the sandbox's AIO share of ", AioBudget());
    return Errno{EAGAIN};
  }
  std::lock_guard<std::mutex> lock(in_flight_mu);
  uint64_t pending = 0;
  for (auto it = in_flight.begin(); it != in_flight.end();) {
    // This thread's earlier call has returned: it makes this one.
    if (it->first == ctx.task.tid ||
        !MayBeInIoSetup(it->second.kernel == &ctx.kernel ? &ctx.kernel : nullptr, it->first)) {
      it = in_flight.erase(it);
      continue;
    }
    if (it->second.kernel == &ctx.kernel) pending += it->second.events;
    ++it;
  }
  auto now = std::chrono::steady_clock::now();
  // Scans past their reuse serve nobody: dropped, so that a server's ended
  // sandboxes leave nothing here (and a new one at a reused address starts
  // from a scan of its own).
  std::erase_if(last_scan, [&](const auto& e) { return now - e.second.at > kScanReuse; });
  Scan& scan = last_scan[&ctx.kernel];
  if (now - scan.at > kScanReuse || scan.held + pending + nr <= AioBudget()) {
    scan = {AioEventsHeld(ctx.kernel), now};
  }
  if (scan.held + pending + nr > AioBudget()) {
    ctx.hint =
        absl::StrCat("io_setup: the sandbox's AIO share of ", AioBudget(), " events is taken");
    return Errno{EAGAIN};
  }
  in_flight[ctx.task.tid] = {&ctx.kernel, nr};
  ctx.let_kernel_run = true;
  return 0;
}

// sync(): the guest's files live in the sentry's memory and its backing
// store (a tmpfs): there is nothing of its own on a disk to flush, and a
// native sync would flush every file system of the host.
SysResult<uint64_t> Sync(SyscallContext&) { return 0; }

// syncfs(fd): the same, for the file system of an fd the guest holds (a
// store file's is memory; a lower-layer file's is the host's, read-only to
// the guest): only the fd is checked.
SysResult<uint64_t> Syncfs(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(UniqueFd fd, ctx.fds.Get(ctx.args.Int(0)));
  (void)fd;
  return 0;
}

}  // namespace sentry::sys
