// --copy-out GUEST:HOST_DIR: guest files taken out of a finished run onto
// the host, as `docker cp` does after the fact.
//
// The guest name (a file, a directory, a pattern: see guest_walk.h; a
// relative one from the guest's first cwd) is expanded in the sandbox's tree
// with no symlink followed at all, the name's own included: a guest's
// symlink is skipped and said, never read through. Each match lands in
// HOST_DIR (made if missing, its parent must exist) under its own last name,
// a directory with what it holds. The host side is written with the
// caller's real uid and gid as the thread's file-system identity (files
// owned by the caller, the caller's permissions checked, also under a
// set-uid or root sentry), every name below HOST_DIR opened with openat2
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS (a host symlink planted there is
// never written through), HOST_DIR itself opened O_NOFOLLOW, and each file
// written to a fresh name then renamed over the old one (a hard link there
// keeps its data). Caps on files and bytes stop the copy with an error.
#ifndef SENTRY_RUN_COPY_OUT_H_
#define SENTRY_RUN_COPY_OUT_H_

#include <string>
#include <vector>

#include "sentry/run/result.h"
#include "sentry/run/run.h"
#include "vfs/vfs.h"

namespace sentry {

// "GUEST:HOST_DIR" (split at the last ':'): "" or why not.
std::string ParseCopyOut(const std::string& value, CopyOutSpec* out);

// Each spec in turn, after the run (the guest's tree whole).
std::vector<CopyOutReport> CopyOut(vfs::Vfs& v, const vfs::Creds& creds, const vfs::NodeRef& cwd,
                                   const RunOptions& o);

// Lines on stderr for a streamed run: what was skipped, what failed.
// Returns whether every copy was whole.
bool PrintCopyOut(const std::vector<CopyOutReport>& reports);

}  // namespace sentry

#endif  // SENTRY_RUN_COPY_OUT_H_
