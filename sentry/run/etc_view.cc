#include "sentry/run/etc_view.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "sentry/base/status_macros.h"
#include "sentry/base/unique_fd.h"

namespace sentry {
namespace {

constexpr size_t kMaxEntries = 100000;
constexpr size_t kMaxListBytes = 64 << 20;
constexpr size_t kMaxCacheBytes = 8 << 20;
constexpr char kCacheName[] = "dpkg-etc.v1";
constexpr std::string_view kCacheMagic = "sentry dpkg-etc v1";

// Files the packaging tools make in maintainer scripts and triggers, which no
// package lists. kTree: everything beneath; kLinkTree: only symlinks beneath.
struct Generated {
  std::string_view path;
  enum Shape { kEntry, kTree, kLinkTree } shape;
};
constexpr Generated kGenerated[] = {
    {"ld.so.cache", Generated::kEntry},           // ldconfig
    {"localtime", Generated::kEntry},             // tzdata
    {"timezone", Generated::kEntry},              // tzdata
    {"nsswitch.conf", Generated::kEntry},         // base-files
    {"profile", Generated::kEntry},               // base-files
    {"shells", Generated::kEntry},                // debianutils' update-shells
    {"inputrc", Generated::kEntry},               // readline-common
    {"mailcap", Generated::kEntry},               // mailcap's update-mime
    {"mtab", Generated::kEntry},                  // a link to /proc/self/mounts
    {"ca-certificates.conf", Generated::kEntry},  // ca-certificates
    {"ssl/certs", Generated::kTree},              // update-ca-certificates: bundle, hash links
    {"alternatives", Generated::kLinkTree},       // update-alternatives
    {"fonts/conf.d", Generated::kLinkTree},       // fontconfig's debconf choices
};

// The sentry's own files (sandbox_tree.cc): the host's never show through.
constexpr std::string_view kSentryOwn[] = {"passwd", "group", "hostname", "hosts", "resolv.conf"};

// Credentials and host identity, whoever owns them: a path equal to or
// beneath one of these...
constexpr std::string_view kDeniedPaths[] = {
    "shadow",         "gshadow",          "sudoers",     "sudoers.d",
    "krb5.keytab",    "machine-id",       "subuid",      "subgid",
    ".pwd.lock",      "security/opasswd", "ssl/private", "NetworkManager/system-connections",
    "wpa_supplicant", "docker",           "containerd",  "ipsec.d",
    "letsencrypt",    "openvpn",          "wireguard",   "pki",
    "cups/ssl",       "environment",
};
// ...a name ending so...
constexpr std::string_view kDeniedSuffixes[] = {
    "-",  // passwd-, shadow-, group-, gshadow-: the shadow tools' backups
    ".key", ".keytab", ".p12", ".pfx", ".jks", ".kdb", ".psk",
};
// ...or a name holding one of these.
constexpr std::string_view kDeniedWords[] = {"secret",     "shadow",   "private", "ssh_host_",
                                             "credential", "password", "token"};

bool WorldReadable(const struct stat& st) {
  switch (st.st_mode & S_IFMT) {
    case S_IFLNK:
      return true;
    case S_IFDIR:
      return (st.st_mode & (S_IROTH | S_IXOTH)) == (S_IROTH | S_IXOTH);
    case S_IFREG:
      return (st.st_mode & S_IROTH) != 0;
    default:
      return false;
  }
}

bool AtOrBeneath(std::string_view rel, std::string_view top) {
  return rel == top || (rel.size() > top.size() && rel.starts_with(top) && rel[top.size()] == '/');
}

// Reads a whole file of at most max bytes into out.
bool ReadAll(int fd, size_t max, std::string& out) {
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) > max) {
    return false;
  }
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return true;
}

// The dpkg database's state: status is replaced, and info/ gains or loses a
// .list, at every install, upgrade and removal.
std::string DpkgStamp(const std::string& admin_dir) {
  struct stat status, info;
  if (stat((admin_dir + "/status").c_str(), &status) < 0 ||
      stat((admin_dir + "/info").c_str(), &info) < 0) {
    return "";
  }
  return absl::StrFormat("%d.%d %d %d %d.%d %d", status.st_mtim.tv_sec, status.st_mtim.tv_nsec,
                         status.st_ino, status.st_size, info.st_mtim.tv_sec, info.st_mtim.tv_nsec,
                         info.st_ino);
}

// The cache directory and file are trusted only if root or the sentry's own
// user owns them and nobody else may write them.
bool Trusted(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && (st.st_uid == 0 || st.st_uid == geteuid()) &&
         (st.st_mode & 022) == 0;
}

UniqueFd OpenCacheDir(bool create) {
  if (create) mkdir(kEtcCacheDir, 0755);
  UniqueFd dir(open(kEtcCacheDir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.get() < 0 || !Trusted(dir.get())) return UniqueFd();
  return dir;
}

std::optional<EtcPaths> ReadCache(const std::string& stamp) {
  UniqueFd dir = OpenCacheDir(false);
  if (dir.get() < 0) return std::nullopt;
  UniqueFd fd(openat(dir.get(), kCacheName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  std::string text;
  if (fd.get() < 0 || !Trusted(fd.get()) || !ReadAll(fd.get(), kMaxCacheBytes, text)) {
    return std::nullopt;
  }
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.size() < 2 || lines[0] != kCacheMagic || lines[1] != stamp) return std::nullopt;
  if (lines.size() - 2 > kMaxEntries) return std::nullopt;
  EtcPaths out;
  out.paths.assign(std::make_move_iterator(lines.begin() + 2),
                   std::make_move_iterator(lines.end()));
  out.Normalize();
  return out;
}

void WriteCache(const std::string& stamp, const EtcPaths& paths) {
  if (geteuid() != 0) return;
  UniqueFd dir = OpenCacheDir(true);
  if (dir.get() < 0) return;
  std::string text = std::string(kCacheMagic) + "\n" + stamp + "\n";
  for (const std::string& p : paths.paths) text += p + "\n";
  std::string tmp = absl::StrCat(kCacheName, ".", getpid());
  UniqueFd fd(openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return;
  bool ok = write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (!ok || renameat(dir.get(), tmp.c_str(), dir.get(), kCacheName) < 0) {
    unlinkat(dir.get(), tmp.c_str(), 0);
  }
}

// Adds the /etc paths of one .list (one absolute path a line) to out.
void ScanList(std::string_view text, EtcPaths& out) {
  constexpr std::string_view kEtc = "/etc/";
  size_t at = 0;
  while (at < text.size() && out.paths.size() < kMaxEntries) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (line.starts_with(kEtc) && line.size() > kEtc.size() && line.size() < PATH_MAX) {
      out.paths.emplace_back(line.substr(kEtc.size()));
    }
    // Paths outside /etc are most of every list: jump to the next "\n/etc/".
    size_t next = text.find("\n/etc/", end);
    at = next == std::string_view::npos ? text.size() : next + 1;
  }
}

}  // namespace

bool EtcPaths::Contains(std::string_view rel) const {
  auto it = std::lower_bound(paths.begin(), paths.end(), rel,
                             [](const std::string& a, std::string_view b) { return a < b; });
  return it != paths.end() && *it == rel;
}

void EtcPaths::Normalize() {
  size_t n = paths.size();
  for (size_t i = 0; i < n; ++i) {
    std::string p = paths[i];
    for (size_t slash = p.rfind('/'); slash != std::string::npos && slash > 0;
         slash = p.rfind('/', slash - 1)) {
      paths.push_back(p.substr(0, slash));
    }
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
}

absl::StatusOr<EtcPaths> ReadDpkgEtcPaths(const std::string& admin_dir) {
  std::string info = admin_dir + "/info";
  int dfd = open(info.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return ErrnoStatus(absl::StrCat("cannot list ", info));
  DIR* d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return ErrnoStatus(absl::StrCat("cannot list ", info));
  }
  EtcPaths out;
  std::string text;
  while (dirent* e = readdir(d)) {
    if (!std::string_view(e->d_name).ends_with(".list")) continue;
    UniqueFd fd(openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() < 0 || !ReadAll(fd.get(), kMaxListBytes, text)) continue;
    ScanList(text, out);
  }
  closedir(d);
  out.Normalize();
  return out;
}

std::shared_ptr<const EtcPaths> HostEtcPaths() {
  static std::mutex mu;
  static std::string cached_key;
  static std::shared_ptr<const EtcPaths> cached;

  const char* env = getenv("DPKG_ADMINDIR");
  bool is_default = env == nullptr || *env == '\0';
  std::string admin_dir = is_default ? kDpkgAdminDir : env;
  std::string stamp = DpkgStamp(admin_dir);
  std::string key = admin_dir + "\n" + stamp;
  std::lock_guard<std::mutex> lock(mu);
  if (cached && !stamp.empty() && key == cached_key) return cached;
  std::optional<EtcPaths> paths;
  bool use_file = is_default && !stamp.empty();
  if (use_file) paths = ReadCache(stamp);
  if (!paths) {
    auto read = ReadDpkgEtcPaths(admin_dir);
    paths = read.ok() ? std::move(*read) : EtcPaths{};
    if (use_file && read.ok()) WriteCache(stamp, *paths);
  }
  cached = std::make_shared<const EtcPaths>(std::move(*paths));
  cached_key = key;
  return cached;
}

EtcView::EtcView(std::shared_ptr<const EtcPaths> owned) : owned_(std::move(owned)) {}

std::shared_ptr<const EtcView> EtcView::ForHost() {
  return std::make_shared<const EtcView>(HostEtcPaths());
}

bool EtcView::Denied(std::string_view rel) {
  for (std::string_view own : kSentryOwn) {
    if (rel == own) return true;
  }
  for (std::string_view top : kDeniedPaths) {
    if (AtOrBeneath(rel, top)) return true;
  }
  std::string lower(rel);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  std::string_view rest = lower;
  while (!rest.empty()) {
    size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    for (std::string_view suffix : kDeniedSuffixes) {
      if (part.ends_with(suffix)) return true;
    }
    for (std::string_view word : kDeniedWords) {
      if (part.find(word) != std::string_view::npos) return true;
    }
  }
  return false;
}

bool EtcView::Shows(std::string_view dir_path, std::string_view name, const struct stat& st) const {
  if (dir_path == "/etc") return Shows(name, st);
  if (!dir_path.starts_with("/etc/")) return false;
  std::string rel(dir_path.substr(5));
  rel += '/';
  rel += name;
  return Shows(rel, st);
}

bool EtcView::Shows(std::string_view rel, const struct stat& st) const {
  if (rel.empty() || Denied(rel) || !WorldReadable(st)) return false;
  if (owned_ && owned_->Contains(rel)) return true;
  for (const Generated& g : kGenerated) {
    if (rel == g.path) return true;
    if (g.shape != Generated::kEntry && AtOrBeneath(rel, g.path)) {
      return g.shape == Generated::kTree || S_ISLNK(st.st_mode);
    }
    // A directory above a generated entry ("ssl" above "ssl/certs").
    if (S_ISDIR(st.st_mode) && AtOrBeneath(g.path, rel)) return true;
  }
  return false;
}

vfs::NodeRef AddHostEtc(vfs::Vfs& v, const std::shared_ptr<vfs::HostDir>& host_root,
                        std::shared_ptr<const vfs::HostFilter> view) {
  struct stat st;
  if (fstatat(host_root->fd.get(), "etc", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
    return nullptr;
  }
  vfs::NodeRef etc = v.MakeLowerNode(host_root, "etc", st);
  if (!etc) return nullptr;
  etc->host_dir->filter = std::move(view);
  v.AddChild(v.root(), "etc", etc);
  return etc;
}

}  // namespace sentry
