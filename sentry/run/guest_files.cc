#include "sentry/run/guest_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
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
                                         const std::vector<std::string>& paths,
                                         uint64_t max_bytes) {
  std::vector<ReturnedFile> out;
  for (const std::string& path : paths) {
    ReturnedFile f;
    f.path = path;
    auto node = v.Lookup(v.root(), path, {}, creds);
    if (!node.ok()) {
      f.error = absl::StrCat(strerrorname_np(node.error()) ?: "E?", ": ", strerror(node.error()));
    } else if ((*node)->kind() != vfs::NodeKind::kFile) {
      f.error = "not a regular file";
    } else if (auto may = v.Permission(**node, R_OK, creds); !may.ok()) {
      f.error = "EACCES: the guest may not read it";
    } else if (auto fd = v.OpenData(**node, O_RDONLY); !fd.ok()) {
      f.error = absl::StrCat(strerrorname_np(fd.error()) ?: "E?", ": ", strerror(fd.error()));
    } else {
      struct stat st;
      f.size = fstat(fd->get(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
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
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace sentry
