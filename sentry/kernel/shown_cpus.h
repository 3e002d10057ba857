// The CPUs a sandbox shows: the first ceil(--cpus) of those it may run on, so
// that /sys/devices/system/cpu (sysfs.h), /proc/stat, /proc/cpuinfo and
// sched_getaffinity (syscalls/sys_sched.cc) agree with its quota. Header-only:
// the syscall handlers use it too.
#ifndef SENTRY_KERNEL_SHOWN_CPUS_H_
#define SENTRY_KERNEL_SHOWN_CPUS_H_

#include <sched.h>

#include <algorithm>
#include <cmath>

namespace sentry {

// host: the CPUs the sandbox may run on (none set: the caller's affinity);
// quota: --cpus (0: none, every CPU of host shows).
inline cpu_set_t ShownCpus(cpu_set_t host, double quota) {
  if (CPU_COUNT(&host) == 0 && sched_getaffinity(0, sizeof(host), &host) < 0) {
    CPU_ZERO(&host);
    CPU_SET(0, &host);
  }
  if (quota <= 0) return host;
  int want = std::max(1, static_cast<int>(std::ceil(quota)));
  cpu_set_t out;
  CPU_ZERO(&out);
  for (int i = 0; i < CPU_SETSIZE && want > 0; ++i) {
    if (CPU_ISSET(i, &host)) {
      CPU_SET(i, &out);
      --want;
    }
  }
  return out;
}

}  // namespace sentry

#endif  // SENTRY_KERNEL_SHOWN_CPUS_H_
