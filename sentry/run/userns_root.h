// Root inside a user namespace that is not the host's: rootless podman (which
// makes the user namespace and calls its runtime there as uid 0), `unshare
// -r`, a pod with a user namespace. That uid 0 has no host privilege and its
// namespace maps few ids (podman's: the caller's uid as 0, then its
// subordinate range), so root's sandbox ids (spawn.h) are not there to
// map, cgroups and /run are not its to write, and so on.
//
// Such a sentry becomes what it is on the host: the caller. It moves into a
// user namespace of its own that maps only the id behind its uid 0 (the
// caller's host uid, podman's "0 1002 1") as that same number, drops the
// capabilities that namespace gave it, and from there runs exactly as
// sentry run by that user from the host: single-id mode, its store and OCI
// state under $XDG_RUNTIME_DIR, rlimits and its own counts for limits, every
// wall of the rootless mode (README, "Without root").
#ifndef SENTRY_RUN_USERNS_ROOT_H_
#define SENTRY_RUN_USERNS_ROOT_H_

#include <sys/types.h>

#include <string>

namespace sentry {

// What /proc/self/{uid,gid}_map say of uid 0 here.
struct NamespacedRoot {
  bool applies = false;  // euid 0, and the map lacks root's sandbox ids
  uid_t outer_uid = 0;   // the ids uid/gid 0 stand for in the parent namespace
  gid_t outer_gid = 0;
};

// Reads the maps (uid_map and gid_map texts, as /proc gives them).
NamespacedRoot ClassifyRoot(uid_t euid, const std::string& uid_map, const std::string& gid_map);

// The uid the caller has on the host side: geteuid(), or outer_uid where
// ClassifyRoot applies (the same before and after LeaveNamespacedRoot).
uid_t CallerUid();

// At start, before any thread: if ClassifyRoot applies, becomes the caller
// as above. Returns "" when done or not needed, else why it could not (then
// the sentry stops: it is neither root nor the caller).
std::string LeaveNamespacedRoot();

}  // namespace sentry

#endif  // SENTRY_RUN_USERNS_ROOT_H_
