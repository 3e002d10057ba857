// A delegated cgroup v2 subtree of a caller without root: a systemd user
// session's scope or service with Delegate=yes, or a container's cgroup
// namespace, where the caller owns its own cgroup's directory and the
// controllers are enabled for its children (cgroup.subtree_control).
//
// Only found and reported so far (`sentry check`): runs without root hold
// their limits by rlimits and the sentry's counts (cgroups.h is cgroup v1).
// Using the subtree needs the sentry to move itself into a leaf first (v2's
// rule of no processes in an inner cgroup), as crun does.
#ifndef SENTRY_RUN_CGROUP_V2_H_
#define SENTRY_RUN_CGROUP_V2_H_

#include <string>
#include <vector>

namespace sentry {

struct DelegatedCgroup {
  std::string dir;                       // "": none
  std::vector<std::string> controllers;  // of memory, pids, cpu: those enabled for children
  std::string why_not;                   // dir empty: why
};

// proc_self_cgroup: the text of /proc/self/cgroup; mount: where the cgroup2
// hierarchy is mounted (/sys/fs/cgroup on a unified host, or a directory
// that looks like one, for tests). Writable: the caller may write the
// directory, its cgroup.procs and cgroup.subtree_control.
DelegatedCgroup FindDelegatedCgroup(const std::string& proc_self_cgroup, const std::string& mount);

// The host's: /proc/self/cgroup, and /sys/fs/cgroup if it is cgroup2.
DelegatedCgroup FindOwnDelegatedCgroup();

}  // namespace sentry

#endif  // SENTRY_RUN_CGROUP_V2_H_
