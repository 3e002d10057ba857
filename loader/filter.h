// Builds the guest's seccomp BPF program from the syscall table.
//
// Written by hand rather than with libseccomp: libseccomp 2.5 cannot say "allow
// these argument values, fail the rest with this errno" (an unconditional rule
// overrides conditional ones, and one argument takes one comparison), and the
// table needs exactly that for ioctl, socket, prctl, clone and personality.
//
// Shape: a wrong architecture or an x32 number kills the process; the number is
// found by binary search over the table's rows; a number with no row gets
// ENOSYS. Every return is one of: ALLOW, USER_NOTIF, TRACE, ERRNO(e).
#ifndef SENTRY_LOADER_FILTER_H_
#define SENTRY_LOADER_FILTER_H_

#include <linux/filter.h>

#include <span>
#include <vector>

#include "syscalls/table.h"

namespace sentry {

std::vector<sock_filter> BuildSeccompFilter(std::span<const SyscallRow> table);

}  // namespace sentry

#endif  // SENTRY_LOADER_FILTER_H_
