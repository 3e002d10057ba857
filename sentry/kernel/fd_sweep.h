// What the guest holds: the (st_dev, st_ino) of every object some guest task
// has an fd to, for FdIdentity's sweep.
#ifndef SENTRY_KERNEL_FD_SWEEP_H_
#define SENTRY_KERNEL_FD_SWEEP_H_

#include <sys/stat.h>

#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "sentry/kernel/fd_identity.h"
#include "sentry/kernel/guest_proc.h"
#include "sentry/kernel/task.h"

namespace sentry {

// Calls fn with the stat of every open file of every task in the table (each
// fd table once: threads that share one are recognised with kcmp). The fd
// numbers come from /proc/TID/fd (through `opener`, which a guest on a
// subordinate range needs); each file is stat'ed on a copy the sentry takes
// with pidfd_getfd, as cheap as a stat through /proc (measured: 1.7 against
// 2.9 us) and open to the sentry in every id mode. False if a table could
// not be read; a task that has gone meanwhile holds nothing.
bool ForEachGuestFile(const TaskTable& tasks, GuestProcOpener& opener,
                      const std::function<void(const struct stat&)>& fn);

// Sorted and unique; nullopt if a table could not be read (an fd whose
// object could not be stat'ed), so that the caller drops nothing.
std::optional<std::vector<FdIdentity::Key>> GuestHeldKeys(const TaskTable& tasks,
                                                          GuestProcOpener& opener);

// The inodes of the sockets the guest's processes hold (what /proc's
// "socket:[N]" links name).
std::set<ino_t> GuestSocketInodes(const TaskTable& tasks, GuestProcOpener& opener);

}  // namespace sentry

#endif  // SENTRY_KERNEL_FD_SWEEP_H_
