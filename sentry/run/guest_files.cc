#include "sentry/run/guest_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "sentry/run/guest_walk.h"
#include "sentry/run/sandbox_tree.h"

namespace sentry {

absl::Status WriteInlineFiles(vfs::Vfs& v, const vfs::Creds& creds,
                              const std::vector<InlineFile>& files) {
  for (const InlineFile& f : files) {
    if (absl::Status s = WriteIntoSandbox(v, creds, f.data, f.mode, f.guest_path); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("files: ", f.guest_path, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

std::vector<ReturnedFile> ReadGuestFiles(vfs::Vfs& v, const vfs::Creds& creds,
                                         const vfs::NodeRef& start,
                                         const std::vector<std::string>& names, uint64_t max_bytes,
                                         size_t max_files, uint64_t max_total,
                                         std::string* cap_hit) {
  GuestWalk walk(v, creds,
                 {.max_entries = max_files,
                  .max_bytes = max_total,
                  .file_bytes = max_bytes,
                  .follow_named = true});
  for (const std::string& name : names) walk.Add(start, name);
  *cap_hit = walk.cap_hit();
  std::vector<ReturnedFile> out;
  for (GuestEntry& e : walk.entries()) {
    if (e.dir) continue;
    ReturnedFile f;
    f.path = std::move(e.key);
    f.error = std::move(e.error);
    if (f.error.empty()) {
      auto fd = v.OpenData(*e.node, O_RDONLY);
      if (!fd.ok()) {
        f.error = absl::StrCat(strerrorname_np(fd.error()) ?: "E?", ": ", strerror(fd.error()));
      } else {
        f.size = e.size;
        f.data.resize(std::min<uint64_t>(f.size, max_bytes));
        size_t got = 0;
        while (got < f.data.size()) {
          ssize_t n =
              pread(fd->get(), f.data.data() + got, f.data.size() - got, static_cast<off_t>(got));
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) break;
          got += static_cast<size_t>(n);
        }
        f.data.resize(got);
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace sentry
