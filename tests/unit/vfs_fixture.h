// A Vfs built for one test: an in-memory root with /tmp (sticky, 01777) and a
// lower layer at /lower made from a host directory the fixture creates, with a
// backing store in a fresh host directory. Both host directories are removed
// afterwards.
//
// The host's lower directory holds:
//   hello.txt      "host data\n", 0644
//   dir/inner.txt  "inner\n"
//   empty/         an empty directory
//   link           symlink to hello.txt
#ifndef SENTRY_TESTS_UNIT_VFS_FIXTURE_H_
#define SENTRY_TESTS_UNIT_VFS_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "vfs/vfs.h"

namespace sentry::vfs {

inline Creds As(uid_t uid, gid_t gid, std::vector<gid_t> groups = {}) {
  Creds c;
  c.uid = uid;
  c.gid = gid;
  c.groups = std::move(groups);
  return c;
}
inline const Creds kRoot = As(0, 0);
inline const Creds kUser = As(1000, 1000);
inline const Creds kOther = As(1001, 1001);

// "OK" or the errno's name ("ENOENT"), so that a failure prints both sides readably.
template <typename R>
std::string ErrnoOf(const R& r) {
  return r.ok() ? "OK" : strerrorname_np(r.error());
}

// The value of a result that must succeed; fails the test (and returns T{}) if not.
template <typename T>
T Must(SysResult<T> r) {
  EXPECT_TRUE(r.ok()) << "unexpected " << ErrnoOf(r);
  return r.ok() ? std::move(r).value() : T{};
}

class VfsTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  Vfs& v() { return *vfs_; }

  SysResult<Resolved> Walk(const std::string& path, const Creds& creds = kRoot,
                           const ResolveOpts& opts = {});
  SysResult<NodeRef> Lookup(const std::string& path, const Creds& creds = kRoot,
                            const ResolveOpts& opts = {});
  // From a start directory other than the root.
  SysResult<NodeRef> LookupAt(const NodeRef& start, const std::string& path,
                              const ResolveOpts& opts, const Creds& creds = kRoot);
  // The node at path, failing the test if it is missing.
  NodeRef Get(const std::string& path);

  // Namespace changes as a syscall handler makes them: Walk, then the operation.
  SysResult<NodeRef> Mkdir(const std::string& path, mode_t mode = 0755, const Creds& creds = kRoot);
  SysResult<NodeRef> MakeFile(const std::string& path, const std::string& data = "",
                              mode_t mode = 0644, const Creds& creds = kRoot);
  SysResult<NodeRef> MakeSymlink(const std::string& path, const std::string& target);
  SysStatus Unlink(const std::string& path, const Creds& creds = kRoot);
  SysStatus Rmdir(const std::string& path, const Creds& creds = kRoot);
  SysStatus Rename(const std::string& from, const std::string& to, unsigned flags = 0,
                   const Creds& creds = kRoot);
  SysStatus Link(const std::string& from, const std::string& to, const Creds& creds = kRoot);

  // A node's data as the guest would read it through its donated fd.
  std::string Read(Node& node);
  // Writes data at offset 0 through a donated O_WRONLY fd.
  void Write(Node& node, const std::string& data);
  std::vector<std::string> Names(const NodeRef& dir);
  // /lower/NAME as a listing's fill makes it: looked up, not opened.
  NodeRef Looked(const std::string& name);
  // dir's names as its listing gives them (Vfs::Listing).
  std::vector<std::string> Listed(const NodeRef& dir);

  // Host side.
  std::string HostRead(const std::string& rel) const;  // relative to the lower dir
  bool HostExists(const std::string& rel) const;
  std::vector<std::string> HostNames(const std::string& rel) const;
  size_t StoreFileCount() const;

  std::string host_dir_;   // holds "lower"
  std::string lower_dir_;  // host_dir_ + "/lower"
  std::string store_dir_;
  std::unique_ptr<Vfs> vfs_;
};

}  // namespace sentry::vfs

#endif  // SENTRY_TESTS_UNIT_VFS_FIXTURE_H_
