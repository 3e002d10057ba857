// The sandbox's initial file tree: what the guest sees at its first instruction.
#ifndef SENTRY_RUN_SANDBOX_TREE_H_
#define SENTRY_RUN_SANDBOX_TREE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "vfs/vfs.h"

namespace sentry {

// A host directory shown at a guest path (`-v HOST:GUEST[:ro|:rw]`, an OCI
// bind mount). Declared once here for every surface that mounts.
struct BindMount {
  enum class Mode {
    kReadOnly,  // a lower layer; writes fail with EROFS
    kOverlay,   // a lower layer; writes copy up into memory (the host is unchanged)
    kReadWrite  // writes reach the host, confined beneath host_path
  };
  std::string host_path;   // absolute, on the host
  std::string guest_path;  // absolute, in the sandbox
  Mode mode = Mode::kOverlay;
};

struct TreeConfig {
  // When set (an OCI bundle's root.path), this host directory is the whole
  // lower layer: its top-level entries replace lower_roots and its own etc/
  // replaces the host's.
  std::string rootfs;
  // Host directories mounted over the tree, in order.
  std::vector<BindMount> mounts;
  // Host top-level entries shown read-only at the same path.
  std::vector<std::string> lower_roots = {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32"};
  // Which host entries /etc shows (etc_view.h); null: EtcView::ForHost(),
  // what the host's installed packages ship there.
  std::shared_ptr<const vfs::HostFilter> etc_view;
  uid_t uid = 1000;  // the guest's own uid and gid (owner of its home)
  gid_t gid = 1000;
  // Whom the host sees writing through -v HOST:GUEST:rw: the guest's uid and
  // gid as they are (-1, docker's habit, for root) or the caller's own (a
  // caller without root has no other).
  uid_t rw_uid = static_cast<uid_t>(-1);
  gid_t rw_gid = static_cast<gid_t>(-1);
  std::string user = "sandbox";
  std::string home = "/home/sandbox";
  std::string hostname = "sandbox";
};

// The lower roots a rootfs gives the sandbox ("/usr", "/bin", ...): its
// top-level entries but those the sandbox makes itself (/etc, /dev, /proc, /sys).
std::vector<std::string> RootfsLowerRoots(const std::string& rootfs);

absl::StatusOr<std::unique_ptr<vfs::Vfs>> BuildSandboxTree(const TreeConfig& config,
                                                           std::unique_ptr<vfs::Store> store);

// Makes every missing directory of the absolute guest_path, as mkdir -p would
// (owned by the guest); returns the last one. An error if a component exists
// and is not a directory.
absl::StatusOr<vfs::NodeRef> MakeSandboxDirs(vfs::Vfs& vfs, const vfs::Creds& creds,
                                             const std::string& guest_path);

// Makes every missing directory of guest_path's parent (owned by the guest),
// then copies the host file or directory at host_path to guest_path. host_path
// itself may be a symlink (the caller named it); links inside a copied
// directory are copied as links, never followed out of it.
absl::Status CopyIntoSandbox(vfs::Vfs& vfs, const vfs::Creds& creds, const std::string& host_path,
                             const std::string& guest_path, bool top = true);

// Makes every missing directory of guest_path's parent (owned by the guest),
// then a new file at guest_path holding data, with mode's permission bits.
// For bytes the sentry has already read and checked (the script argument).
absl::Status WriteIntoSandbox(vfs::Vfs& vfs, const vfs::Creds& creds, std::string_view data,
                              mode_t mode, const std::string& guest_path);

// WriteIntoSandbox over whatever guest_path holds (a lower file of a rootfs
// is whited out first): an engine's /etc/hosts over the bundle's own.
absl::Status ReplaceInSandbox(vfs::Vfs& vfs, const vfs::Creds& creds, std::string_view data,
                              const std::string& guest_path);

}  // namespace sentry

#endif  // SENTRY_RUN_SANDBOX_TREE_H_
