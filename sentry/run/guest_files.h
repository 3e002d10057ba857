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

// Reads each absolute guest path as creds may (the guest's own permissions,
// symlinks resolved in the sandbox's tree): regular files only, the first
// max_bytes of each. A file not read carries why.
std::vector<ReturnedFile> ReadGuestFiles(vfs::Vfs& vfs, const vfs::Creds& creds,
                                         const std::vector<std::string>& paths, uint64_t max_bytes);

}  // namespace sentry

#endif  // SENTRY_RUN_GUEST_FILES_H_
