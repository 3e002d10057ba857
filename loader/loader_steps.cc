#include "loader/loader.h"

namespace sentry {

const char* LoaderStepName(LoaderStep step) {
  switch (step) {
    case LoaderStep::kWaitMaps:
      return "wait for id maps";
    case LoaderStep::kMountPrivate:
      return "make mounts private";
    case LoaderStep::kMountRoot:
      return "mount the new root";
    case LoaderStep::kBindLower:
      return "bind the lower layer";
    case LoaderStep::kMountStore:
      return "mount the backing store";
    case LoaderStep::kPivotRoot:
      return "pivot_root";
    case LoaderStep::kRemountRoot:
      return "make the root read-only";
    case LoaderStep::kHostname:
      return "set the hostname";
    case LoaderStep::kFork:
      return "fork the guest";
    case LoaderStep::kDropCaps:
      return "drop capabilities";
    case LoaderStep::kSetIds:
      return "set the sandbox uid/gid";
    case LoaderStep::kNoNewPrivs:
      return "set no_new_privs";
    case LoaderStep::kSeccomp:
      return "install the seccomp filter";
    case LoaderStep::kWaitGo:
      return "wait for the sentry";
    case LoaderStep::kExec:
      return "execve";
    case LoaderStep::kStdio:
      return "set up stdin/stdout/stderr";
    case LoaderStep::kRlimits:
      return "set resource limits";
    case LoaderStep::kWaitCgroups:
      return "join the cgroups";
    case LoaderStep::kSubreaper:
      return "become the guest's subreaper, in a session of its own";
    case LoaderStep::kNetns:
      return "make the network namespace";
    case LoaderStep::kLoopback:
      return "bring up loopback";
    case LoaderStep::kExtraFds:
      return "place the preserved fds";
    case LoaderStep::kTerminal:
      return "make the guest's terminal";
    case LoaderStep::kLandlock:
      return "make the guest's Landlock domain";
    case LoaderStep::kPoolCaps:
      return "cap the user namespace's kernel counts";
    case LoaderStep::kOwner:
      return "take the sandbox's host id to make its user namespace";
    case LoaderStep::kIdMaps:
      return "map the caller's uid and gid in the user namespace";
    case LoaderStep::kReady:
      return "ready";
    case LoaderStep::kListener:
      return "listener";
  }
  return "?";
}

}  // namespace sentry
