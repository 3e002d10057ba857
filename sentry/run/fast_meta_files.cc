#include "sentry/run/fast_meta_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "fastmeta/library.h"
#include "fastmeta/region.h"

namespace sentry {
namespace {

vfs::NodeRef AddSyntheticFile(vfs::Vfs& v, const vfs::NodeRef& dir, const std::string& name,
                              mode_t mode, vfs::Generator generate) {
  vfs::NodeRef f = v.NewNode(vfs::NodeKind::kSynthetic, S_IFREG | mode, 0, 0);
  f->generate = std::move(generate);
  v.AddChild(dir, name, f);
  return f;
}

}  // namespace

std::set<std::string> FastMetaTops(const TreeConfig& tree) {
  std::set<std::string> tops;
  if (!tree.rootfs.empty()) return tops;  // an OCI bundle: not published
  for (const std::string& root : tree.lower_roots) {
    if (root.size() > 1 && root[0] == '/' && root.find('/', 1) == std::string::npos) {
      tops.insert(root.substr(1));
    }
  }
  tops.insert("etc");
  for (const BindMount& m : tree.mounts) {
    // A mount at /usr (or at /) replaces what the name leads to.
    size_t end = m.guest_path.find('/', 1);
    std::string top = m.guest_path.substr(1, end == std::string::npos ? end : end - 1);
    if (end == std::string::npos || top.empty()) tops.erase(top);
    if (m.guest_path == "/") tops.clear();
  }
  return tops;
}

absl::Status AddFastMeta(Kernel& kernel, const TreeConfig& tree) {
  std::set<std::string> tops = FastMetaTops(tree);
  if (tops.empty()) return absl::FailedPreconditionError("no lower root to publish");
  auto made = FastMeta::Create();
  if (!made.ok()) return made.status();
  std::shared_ptr<FastMeta> fm = std::move(*made);
  vfs::Vfs& v = kernel.vfs();
  vfs::NodeRef etc = v.Child(v.root(), "etc");
  if (!etc || !etc->IsDir()) return absl::FailedPreconditionError("no /etc");
  vfs::NodeRef dir = v.NewNode(vfs::NodeKind::kDir, S_IFDIR | 0755, 0, 0);
  v.AddChild(etc, "sentry", dir);
  vfs::NodeRef lib = AddSyntheticFile(v, dir, "libfastmeta.so", 0755, [] {
    return std::string(reinterpret_cast<const char*>(kFastMetaLibrary), kFastMetaLibrarySize);
  });
  lib->reopen = [fm](int) { return fm->OpenLibrary(); };
  vfs::NodeRef region = AddSyntheticFile(v, dir, "fastmeta", 0444, nullptr);
  region->sized = false;
  region->reopen = [fm](int) { return fm->OpenReadOnly(); };
  AddSyntheticFile(v, etc, "ld.so.preload", 0644,
                   [] { return std::string(SENTRY_FM_LIBRARY_PATH "\n"); });
  // The sentry's token locks read l_pid 0 in a guest's pid namespace (the
  // sentry is outside it), else the sentry's own pid.
  fm->EnableTokens(kernel.config().namespaces ? 0 : getpid());
  // Each token is locked where it is made (off the guest's wait when the
  // stash makes it): its id is FastMeta's, as a donation's would be.
  kernel.vfs().store().set_token_locks(&FastMeta::NewTokenId);
  if (kernel.config().fast_listings) {
    fm->EnableListings();
    if (kernel.config().fast_negatives) fm->EnableNegatives();
    if (kernel.config().fast_dir_streams) fm->EnableDirStreams();
  }
  if (kernel.config().fast_upper) fm->EnableUpper();
  if (kernel.config().fast_fd_records) fm->EnableFdRecords();
  if (kernel.config().fast_upper && kernel.config().fast_upper_files) fm->EnableUpperFiles();
  kernel.set_fast_meta(std::move(fm), std::move(tops));
  return absl::OkStatus();
}

}  // namespace sentry
