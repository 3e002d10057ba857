// Subordinate-range mode of a sentry without root: where the caller has a
// range in /etc/subuid and /etc/subgid (subuid(5)) and newuidmap/newgidmap
// are installed (Debian's uidmap), the sandbox's user namespace maps, as
// rootless podman's does:
//
//   inside 0            -> the caller's uid (the namespace's root: the loader,
//                          the backing store's owner, the guest with --root)
//   inside 1 .. n       -> the range's first n ids (n <= 65536), so the
//                          guest's 1000 is a host uid of the caller's range,
//                          not the caller's own: its processes cannot be
//                          signalled, traced or read by it, nor reach the
//                          caller's by uid, and nobody (65534) is a real id.
//
// An unprivileged process may write only a one-line map of its own ids;
// the setuid helpers write these for the loader's pid from outside, after
// the clone and before the loader takes its ids (spawn.cc).
//
// Who is charged. Counts kept per host uid (pipe buffers, epoll watches,
// unix fds in flight) land on the range's ids. Counts kept per user
// namespace (RLIMIT_NPROC, inotify, mqueue bytes, pending signals) are
// charged at every level up to the host's, and there to the namespace's
// maker, the caller (kernel/ucount.c): so nproc_budget.h still shares the
// caller's RLIMIT_NPROC in this mode.
#ifndef SENTRY_RUN_SUBID_RANGE_H_
#define SENTRY_RUN_SUBID_RANGE_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace sentry {

// At most this many ids of a range are mapped (the guest's 1 .. 65536).
inline constexpr uint32_t kMaxRangeIds = 65536;

struct SubidRange {
  uint32_t start = 0;
  uint32_t count = 0;  // 0: none
};

// The first range of `name`, or of `id` written as a number, in the text of
// /etc/subuid or /etc/subgid ("NAME:START:COUNT" lines; a bad line is
// skipped, as shadow's own parser does).
SubidRange FindSubidRange(const std::string& text, const std::string& name, uint32_t id);

// What the sandbox's maps will be for this caller and guest.
struct SubidPlan {
  bool usable = false;
  std::string why_not;  // !usable: one clause, for a notice or an error
  uid_t caller_uid = 0;
  gid_t caller_gid = 0;
  SubidRange uids, gids;  // count capped at kMaxRangeIds
  std::string newuidmap, newgidmap;
  // The host ids of the guest's uid/gid inside (0: the caller's).
  uid_t HostUid(uid_t inside) const { return inside == 0 ? caller_uid : uids.start + inside - 1; }
  gid_t HostGid(gid_t inside) const { return inside == 0 ? caller_gid : gids.start + inside - 1; }
};

// Reads /etc/subuid, /etc/subgid and finds the helpers for the calling
// user (real uid), whose guest is guest_uid/guest_gid inside.
SubidPlan PlanSubids(uid_t guest_uid, gid_t guest_gid);

// The helpers' arguments after the pid: "0 CALLER 1 1 START N".
std::string MapArgs(uint32_t caller, const SubidRange& range);

// Runs newuidmap and newgidmap for `pid` (a process of the caller's, in a
// user namespace it made, dumpable, with no map yet). Its error
// (PermissionDenied) is the one line sentry prints: which wall, why (the
// helper's own words), the choices.
absl::Status MapWithHelpers(pid_t pid, const SubidPlan& plan);

// `sentry check`: maps a throwaway user namespace as a run would (a child
// that makes one and waits), so that check says what a run will meet.
absl::Status ProbeSubids(const SubidPlan& plan);

}  // namespace sentry

#endif  // SENTRY_RUN_SUBID_RANGE_H_
