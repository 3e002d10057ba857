// GuestWalk: what names a caller gave for files to take out of a finished
// run (serve's and mcp's returnFiles, `sentry run --copy-out`) expand to in
// the sandbox's tree.
//
// A name is a file, a directory (taken whole, depth first in name order) or
// a pattern with * ? [...] in its names, as a shell's glob (a leading dot is
// matched only by a dot). Everything is seen as the guest's user may see it
// (its permissions). No symlink is followed below the name asked: a symlink
// met in a directory or matched by a pattern is listed with an error, never
// read through, so a guest's `out/x -> /etc/shadow` or `-> /host/mount`
// yields nothing. Caps on the count of entries and on the bytes of the
// files taken end the walk, and cap_hit() says which.
#ifndef SENTRY_RUN_GUEST_WALK_H_
#define SENTRY_RUN_GUEST_WALK_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "vfs/vfs.h"

namespace sentry {

struct GuestEntry {
  // The name as asked, plus what a directory or a pattern added
  // ("out/*.csv" gives "out/a.csv"; "res" gives "res/sub/x.txt").
  std::string key;
  // From the matched name's own last component ("a.csv", "res/sub/x.txt"):
  // where copy-out places it in the host directory.
  std::string rel;
  vfs::NodeRef node;  // null with an error
  bool dir = false;
  uint64_t size = 0;  // a file's
  mode_t mode = 0;    // permission bits
  std::string error;  // why this name gives nothing ("" if it does)
};

class GuestWalk final {
 public:
  struct Limits {
    size_t max_entries = 1000;     // files, directories and errors
    uint64_t max_bytes = 1 << 30;  // the files' bytes taken and the names', in all
    uint64_t file_bytes = 0;       // bytes of each file counted (0: its size)
    // Symlinks on the way to the name asked are resolved in the sandbox's
    // tree (serve's returnFiles, read as the guest reads); false: none at
    // all, the name's own last component included (copy-out).
    bool follow_named = true;
  };

  GuestWalk(vfs::Vfs& v, const vfs::Creds& creds, Limits limits)
      : v_(v), creds_(creds), limits_(limits) {}

  // Adds what `asked` names; a relative name starts at `start` (the guest's
  // first cwd). The caller has checked it: no "." or ".." names, no NUL.
  void Add(const vfs::NodeRef& start, const std::string& asked);

  std::vector<GuestEntry>& entries() { return entries_; }
  // "" or what ended the walk early ("at most 32 files", "at most 8 MiB").
  const std::string& cap_hit() const { return cap_hit_; }
  uint64_t bytes() const { return bytes_; }

 private:
  void Expand(const vfs::NodeRef& dir, const std::vector<std::string>& names, size_t i,
              const std::string& key, const std::string& rel);
  void Take(const vfs::NodeRef& node, const std::string& key, const std::string& rel, int depth);
  bool Room();
  void Error(const std::string& key, const std::string& why);

  vfs::Vfs& v_;
  const vfs::Creds& creds_;
  Limits limits_;
  std::vector<GuestEntry> entries_;
  std::string cap_hit_;
  uint64_t bytes_ = 0;
};

// The name has * ? or [ (a pattern).
bool HasGlob(const std::string& name);

}  // namespace sentry

#endif  // SENTRY_RUN_GUEST_WALK_H_
