// The sandbox's /etc: what the installed packages ship there, and nothing an
// administrator added.
//
// The rule, in order, for every host entry beneath /etc:
//   1. a credential is never shown, whoever owns it (Denied below: shadow and
//      its kin, sudoers, ssh host keys, ssl/private, keytabs, *.key, backups
//      such as passwd-, machine-id...); nor are the names the sentry makes
//      itself (passwd, group, hostname, hosts, resolv.conf);
//   2. nor is anything the sandbox's "other" user could not read on the host
//      (a file without o+r, a directory without o+rx; symlinks always read);
//   3. a path dpkg lists for an installed package is shown (its info/*.list
//      files, conffiles included), with every directory above it;
//   4. so are the few files the packaging tools generate instead of shipping
//      (kGenerated in etc_view.cc: ld.so.cache, localtime, the CA bundle and
//      its hash links, update-alternatives' links...);
//   5. nothing else: what an administrator added (a token in /etc/environment,
//      a site config, a private CA) stays on the host.
//
// Reading the dpkg lists costs ~10 ms (900 files, 10 MB here), so the /etc
// paths they name are kept in a cache file (/var/cache/sentry/dpkg-etc.v1)
// keyed by the dpkg database's stamps (status and info/ change on every
// install and removal), and in the process for `sentry pool`.
#ifndef SENTRY_RUN_ETC_VIEW_H_
#define SENTRY_RUN_ETC_VIEW_H_

#include <sys/stat.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "vfs/vfs.h"

namespace sentry {

// Where dpkg keeps its database, unless DPKG_ADMINDIR says otherwise (as it
// does for dpkg itself).
inline constexpr char kDpkgAdminDir[] = "/var/lib/dpkg";
inline constexpr char kEtcCacheDir[] = "/var/cache/sentry";

// Paths beneath /etc that installed packages own, relative to /etc ("ssl",
// "ssl/openssl.cnf"), with every directory above each: sorted, no duplicates.
struct EtcPaths {
  std::vector<std::string> paths;
  bool Contains(std::string_view rel) const;
  // Sorts, removes duplicates and adds the missing ancestors.
  void Normalize();
};

// Reads every info/*.list of the dpkg database at admin_dir. Lines longer
// than PATH_MAX and entries past 100,000 are ignored (the database is the
// host's, but the sentry's memory stays bounded whatever it holds).
absl::StatusOr<EtcPaths> ReadDpkgEtcPaths(const std::string& admin_dir);

// The host's set: from the process's copy, else the cache file, else
// ReadDpkgEtcPaths (then the cache file is written, if the sentry is root).
// An unreadable dpkg database (not a Debian host) gives an empty set: /etc
// then shows only the generated files.
std::shared_ptr<const EtcPaths> HostEtcPaths();

class EtcView final : public vfs::HostFilter {
 public:
  explicit EtcView(std::shared_ptr<const EtcPaths> owned);
  // The host's view (HostEtcPaths).
  static std::shared_ptr<const EtcView> ForHost();

  // dir_path is a host path beneath /etc ("/etc", "/etc/ssl").
  bool Shows(std::string_view dir_path, std::string_view name,
             const struct stat& st) const override;
  // rel: a path relative to /etc.
  bool Shows(std::string_view rel, const struct stat& st) const;
  static bool Denied(std::string_view rel);

 private:
  std::shared_ptr<const EtcPaths> owned_;
};

// Adds the host's /etc (beneath host_root) to v's root, shown through view;
// null if the host has no /etc directory.
vfs::NodeRef AddHostEtc(vfs::Vfs& v, const std::shared_ptr<vfs::HostDir>& host_root,
                        std::shared_ptr<const vfs::HostFilter> view);

}  // namespace sentry

#endif  // SENTRY_RUN_ETC_VIEW_H_
