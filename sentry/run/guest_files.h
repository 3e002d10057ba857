// Files that cross a run's edge as bytes, for `sentry serve` and `mcp`: a
// request's files written into the guest's tree before the run, and guest
// files read back after it. Neither ever names a host path.
#ifndef SENTRY_RUN_GUEST_FILES_H_
#define SENTRY_RUN_GUEST_FILES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sentry/run/result.h"
#include "sentry/run/run.h"
#include "vfs/vfs.h"

namespace sentry {

// Writes each file (parents made as mkdir -p would, owned by the guest). An
// error names the first file that could not be written.
absl::Status WriteInlineFiles(vfs::Vfs& vfs, const vfs::Creds& creds,
                              const std::vector<InlineFile>& files);

// What a request's returnFiles give: each name (a file, a directory, a
// pattern; relative ones from `start`, the guest's first cwd) expanded by a
// GuestWalk, symlinks on the way resolved in the sandbox's tree as the guest
// would, none followed below the name. Each file under its key as asked
// (plus what a directory or pattern added), the first max_bytes of it; at
// most max_files entries and max_total bytes in all, *cap_hit saying which
// ended the list. A name that gives nothing carries why.
std::vector<ReturnedFile> ReadGuestFiles(vfs::Vfs& vfs, const vfs::Creds& creds,
                                         const vfs::NodeRef& start,
                                         const std::vector<std::string>& names, uint64_t max_bytes,
                                         size_t max_files, uint64_t max_total,
                                         std::string* cap_hit);

}  // namespace sentry

#endif  // SENTRY_RUN_GUEST_FILES_H_
