// What the guest holds: the (st_dev, st_ino) of every object some guest task
// has an fd to, for FdIdentity's sweep.
#ifndef SENTRY_KERNEL_FD_SWEEP_H_
#define SENTRY_KERNEL_FD_SWEEP_H_

#include <optional>
#include <vector>

#include "sentry/kernel/fd_identity.h"
#include "sentry/kernel/task.h"

namespace sentry {

// Reads /proc/TID/fd of every task in the table (each fd table once: threads
// that share one are recognised with kcmp), with the sentry's own fs
// identity. Sorted and unique; nullopt if a table could not be read (an fd
// whose object could not be stat'ed), so that the caller drops nothing.
// A task that has gone meanwhile holds nothing.
std::optional<std::vector<FdIdentity::Key>> GuestHeldKeys(const TaskTable& tasks);

}  // namespace sentry

#endif  // SENTRY_KERNEL_FD_SWEEP_H_
