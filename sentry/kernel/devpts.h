// /dev/pts and /dev/ptmx, served from the sandbox's own devpts instance.
//
// The loader mounts a private devpts (newinstance) in the guest's mount view;
// the sentry holds it as an O_PATH directory. /dev/pts lists that instance's
// entries as device nodes (owners as the sandbox sees them), opening one opens
// the entry beneath that directory, and /dev/ptmx links to pts/ptmx, as in a
// container. /dev/tty opens the caller's controlling terminal (one of those
// ptys; ENXIO without one). The ptys are the sandbox's alone: no host
// terminal is reachable.
#ifndef SENTRY_KERNEL_DEVPTS_H_
#define SENTRY_KERNEL_DEVPTS_H_

#include "sentry/base/unique_fd.h"
#include "sentry/kernel/kernel.h"

namespace sentry {

// dev_dir is the VFS's /dev; pts_dir an invalid fd when the sandbox has no
// devpts (then /dev/pts stays empty and there is no /dev/ptmx).
void MountDevpts(Kernel& kernel, const vfs::NodeRef& dev_dir, UniqueFd pts_dir);

}  // namespace sentry

#endif  // SENTRY_KERNEL_DEVPTS_H_
