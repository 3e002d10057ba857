// sysinfo: the sandbox's own figures, nothing of the host's.
#include <sys/sysinfo.h>
#include <time.h>

#include "syscalls/handlers.h"

namespace sentry::sys {

SysResult<uint64_t> Sysinfo(SyscallContext& ctx) {
  struct sysinfo si {};
  timespec boot;
  clock_gettime(CLOCK_BOOTTIME, &boot);
  static const long start = boot.tv_sec;
  si.uptime = boot.tv_sec - start;
  uint64_t mem = ctx.kernel.config().memory_bytes ? ctx.kernel.config().memory_bytes : 1ull << 30;
  si.totalram = mem;
  si.freeram = mem / 2;
  si.procs = static_cast<unsigned short>(ctx.kernel.tasks().ProcessCount());
  si.mem_unit = 1;
  SYS_TRY(ctx.mem.CopyOutValue(ctx.args.Ptr(0), si));
  return 0;
}

}  // namespace sentry::sys
