// The guest's seccomp program, built from the syscall table when sentry is
// built (loader/gen_filter.cc), so that a run does not spend its start
// building it. Equal to BuildSeccompFilter(SyscallTable()): a unit test checks.
#ifndef SENTRY_LOADER_PREBUILT_FILTER_H_
#define SENTRY_LOADER_PREBUILT_FILTER_H_

#include <linux/filter.h>

#include <span>

namespace sentry {

std::span<const sock_filter> PrebuiltSeccompFilter();

}  // namespace sentry

#endif  // SENTRY_LOADER_PREBUILT_FILTER_H_
