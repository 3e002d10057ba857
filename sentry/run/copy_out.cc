#include "sentry/run/copy_out.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/base/fs_identity.h"
#include "sentry/base/unique_fd.h"
#include "sentry/run/guest_walk.h"

namespace sentry {
namespace {

constexpr uint64_t kBeneath = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

std::string ErrnoText(int err) {
  return absl::StrCat(strerrorname_np(err) ?: "E?", ": ", strerror(err));
}

int OpenBeneath(int dir, const std::string& rel, uint64_t flags, mode_t mode = 0) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = kBeneath;
  int fd;
  do {
    fd = static_cast<int>(syscall(SYS_openat2, dir, rel.c_str(), &how, sizeof(how)));
  } while (fd < 0 && errno == EAGAIN);
  return fd;
}

// The directory holding rel's last name, below root: "" (root itself) or
// opened beneath it. Its parents were made first (a walk is depth first).
bool SplitParent(int root, const std::string& rel, UniqueFd* parent, std::string* name) {
  size_t slash = rel.rfind('/');
  *name = slash == std::string::npos ? rel : rel.substr(slash + 1);
  if (slash == std::string::npos) {
    *parent = UniqueFd(fcntl(root, F_DUPFD_CLOEXEC, 3));
  } else {
    *parent = UniqueFd(OpenBeneath(root, rel.substr(0, slash), O_RDONLY | O_DIRECTORY));
  }
  return parent->get() >= 0;
}

// Copies from -> to: the file's bytes, as many as it held when walked.
bool CopyBytes(int from, int to, uint64_t size) {
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = copy_file_range(from, nullptr, to, nullptr, size - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP)) break;
    if (n < 0) return false;
    if (n == 0) return true;  // the file shrank
    done += static_cast<uint64_t>(n);
  }
  char buf[1 << 16];
  while (done < size) {
    ssize_t n =
        pread(from, buf, std::min<uint64_t>(sizeof(buf), size - done), static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    for (ssize_t w = 0; w < n;) {
      ssize_t m = write(to, buf + w, static_cast<size_t>(n - w));
      if (m < 0 && errno == EINTR) continue;
      if (m <= 0) return false;
      w += m;
    }
    done += static_cast<uint64_t>(n);
  }
  return true;
}

class Writer final {
 public:
  Writer(vfs::Vfs& v, CopyOutReport& r) : v_(v), r_(r) {}

  // HOST_DIR: made if missing (its last name only), never a symlink.
  bool OpenRoot(const std::string& host_dir) {
    CallerFsIdentity as_caller;
    if (!as_caller.ok()) return Fail("cannot take the caller's identity");
    if (mkdir(host_dir.c_str(), 0755) < 0 && errno != EEXIST) return Fail(ErrnoText(errno));
    root_ = UniqueFd(open(host_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!root_) {
      return Fail(errno == ELOOP || errno == ENOTDIR ? "not a directory (a symlink is not followed)"
                                                     : ErrnoText(errno));
    }
    return true;
  }

  // One entry of the walk; false when the copy must stop.
  bool Put(const GuestEntry& e) {
    std::string why = e.dir ? Dir(e) : File(e);
    if (why.empty()) return true;
    r_.error = absl::StrCat(e.key, ": ", why);
    return false;
  }

 private:
  std::string Dir(const GuestEntry& e) {
    CallerFsIdentity as_caller;
    UniqueFd parent;
    std::string name;
    if (!SplitParent(root_.get(), e.rel, &parent, &name)) return ErrnoText(errno);
    if (mkdirat(parent.get(), name.c_str(), (e.mode & 0777) | 0700) < 0 && errno != EEXIST) {
      return ErrnoText(errno);
    }
    UniqueFd made(OpenBeneath(parent.get(), name, O_RDONLY | O_DIRECTORY));
    if (!made)
      return errno == ELOOP || errno == ENOTDIR ? "on the host, not a directory" : ErrnoText(errno);
    return "";
  }

  std::string File(const GuestEntry& e) {
    // The guest's bytes are opened as the sentry (the store is its own).
    auto data = v_.OpenData(*e.node, O_RDONLY);
    if (!data.ok()) return ErrnoText(data.error());
    CallerFsIdentity as_caller;
    UniqueFd parent;
    std::string name;
    if (!SplitParent(root_.get(), e.rel, &parent, &name)) return ErrnoText(errno);
    std::string tmp = absl::StrCat(".", name.substr(0, 200), ".sentry-", getpid(), "-", ++n_);
    UniqueFd to(OpenBeneath(parent.get(), tmp, O_WRONLY | O_CREAT | O_EXCL, 0600));
    if (!to) return ErrnoText(errno);
    bool ok = CopyBytes(data->get(), to.get(), e.size) && fchmod(to.get(), e.mode & 0777) == 0;
    int err = errno;
    to.Reset();
    if (ok && renameat(parent.get(), tmp.c_str(), parent.get(), name.c_str()) < 0) {
      ok = false;
      err = errno;
    }
    if (!ok) {
      unlinkat(parent.get(), tmp.c_str(), 0);
      return err == EISDIR ? "on the host, a directory" : ErrnoText(err);
    }
    ++r_.files;
    r_.bytes += e.size;
    return "";
  }

  bool Fail(const std::string& why) {
    r_.error = absl::StrCat(r_.to, ": ", why);
    return false;
  }

  vfs::Vfs& v_;
  CopyOutReport& r_;
  UniqueFd root_;
  int n_ = 0;
};

}  // namespace

std::string ParseCopyOut(const std::string& value, CopyOutSpec* out) {
  size_t colon = value.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == value.size()) {
    return "needs GUEST_PATH:HOST_DIR";
  }
  out->guest = value.substr(0, colon);
  out->host_dir = value.substr(colon + 1);
  std::vector<std::string> names = absl::StrSplit(out->guest, '/', absl::SkipEmpty());
  if (names.empty()) return "the guest path names / itself: name a directory below it";
  for (const std::string& n : names) {
    if (n == "." || n == "..") return "the guest path may not hold \".\" or \"..\"";
  }
  return "";
}

std::vector<CopyOutReport> CopyOut(vfs::Vfs& v, const vfs::Creds& creds, const vfs::NodeRef& cwd,
                                   const RunOptions& o) {
  std::vector<CopyOutReport> reports;
  size_t files_left = o.copy_out_max_files;
  uint64_t bytes_left = o.copy_out_max_bytes;
  for (const CopyOutSpec& spec : o.copy_out) {
    CopyOutReport r;
    r.from = spec.guest;
    r.to = spec.host_dir;
    GuestWalk walk(v, creds,
                   {.max_entries = files_left, .max_bytes = bytes_left, .follow_named = false});
    walk.Add(cwd, spec.guest);
    std::vector<GuestEntry>& entries = walk.entries();
    Writer writer(v, r);
    bool named_failed = entries.size() == 1 && !entries[0].error.empty();
    if (named_failed) {
      r.error = absl::StrCat(entries[0].key, ": ", entries[0].error);
    } else if (writer.OpenRoot(spec.host_dir)) {
      for (const GuestEntry& e : entries) {
        if (!e.error.empty()) {
          r.skipped.push_back(absl::StrCat(e.key, ": ", e.error));
        } else if (!writer.Put(e)) {
          break;
        }
      }
      if (r.error.empty() && !walk.cap_hit().empty()) {
        r.error =
            absl::StrCat("stopped: --copy-out-max-files and --copy-out-max allow ", walk.cap_hit());
      }
    }
    files_left -= std::min(files_left, entries.size());
    bytes_left -= std::min(bytes_left, walk.bytes());
    reports.push_back(std::move(r));
  }
  return reports;
}

bool PrintCopyOut(const std::vector<CopyOutReport>& reports) {
  bool whole = true;
  for (const CopyOutReport& r : reports) {
    size_t shown = 0;
    for (const std::string& s : r.skipped) {
      if (++shown > 5) {
        std::fprintf(stderr, "sentry: --copy-out %s: %zu more skipped\n", r.from.c_str(),
                     r.skipped.size() - 5);
        break;
      }
      std::fprintf(stderr, "sentry: --copy-out %s: skipped %s\n", r.from.c_str(), s.c_str());
    }
    if (!r.error.empty()) {
      whole = false;
      std::fprintf(stderr, "sentry: --copy-out %s:%s failed: %s (%lu files written)\n",
                   r.from.c_str(), r.to.c_str(), r.error.c_str(),
                   static_cast<unsigned long>(r.files));
    }
  }
  return whole;
}

}  // namespace sentry
