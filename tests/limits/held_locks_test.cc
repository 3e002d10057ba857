// The sentry keeps a reference to each read-only system (lower) file it
// donates, so that fstat costs one kcmp (sentry/kernel/fd_holds.h). A lock
// on such a description would then outlive the guest's close of it. Lower
// files are the host's own inodes, so the host sees what the guest's locks
// leave: here a guest takes a flock and an OFD lock on fds it fstat'ed
// (held), closes them, and waits; the host must then take both locks at
// once. Without the trap that lets go of the reference first
// (syscalls/sys_locks.cc) both stay taken until the guest exits.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "tests/limits/limits_util.h"

namespace sentry::limits {
namespace {

// Coreutils no other test locks.
constexpr const char* kFlockFile = "/usr/bin/base32";
constexpr const char* kOfdFile = "/usr/bin/base64";

TEST(HeldLocks, LocksOnHeldLowerFilesGoWithTheGuestsClose) {
  std::string code = std::string("import os, fcntl, struct, time\n") + "A = '" + kFlockFile +
                     "'\nB = '" + kOfdFile + R"('
a = os.open(A, os.O_RDONLY); os.fstat(a); os.fstat(a)
fcntl.flock(a, fcntl.LOCK_EX)
b = os.open(B, os.O_RDONLY); os.fstat(b); os.fstat(b)
F_OFD_SETLK = 37
fcntl.fcntl(b, F_OFD_SETLK, struct.pack('hhqqi4x', fcntl.F_RDLCK, 0, 0, 0, 0))
os.fstat(a); os.fstat(b)
os.close(a); os.close(b)
# Another system file opened and fstat'ed: the sentry's holds go on.
c = os.open('/usr/bin/env', os.O_RDONLY); os.fstat(c)
print('closed', flush=True)
time.sleep(4)
)";
  Child c = SpawnSentry({}, {"/usr/bin/python3", "-c", code});
  std::string seen = ReadUntil(c.out, "closed", 30);
  ASSERT_NE(seen.find("closed"), std::string::npos) << seen;
  int fd = open(kFlockFile, O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  int rc = flock(fd, LOCK_EX | LOCK_NB);
  int err = errno;
  if (rc == 0) flock(fd, LOCK_UN);
  close(fd);
  int ofd = open(kOfdFile, O_RDONLY | O_CLOEXEC);
  ASSERT_GE(ofd, 0);
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  ASSERT_EQ(fcntl(ofd, F_OFD_GETLK, &fl), 0);
  close(ofd);
  Finished f = Collect(c, 30);
  EXPECT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(rc, 0) << "the guest's closed flock is still taken: " << strerror(err);
  EXPECT_EQ(fl.l_type, F_UNLCK) << "the guest's closed OFD lock is still taken";
}

// Without a pid namespace (and no Landlock signal scope) fcntl's filter
// refuses F_SETOWN with EPERM, and sends the lock commands to the same
// handler: the refusal must stay one, not become a call the kernel runs.
TEST(HeldLocks, WithoutNamespacesSetOwnStaysRefusedBesideTheLockTrap) {
  Child c = SpawnSentry({"--no-namespaces", "--no-landlock"},
                        {"/usr/bin/python3", "-c",
                         "import os, fcntl, struct\n"
                         "r, w = os.pipe()\n"
                         "try:\n"
                         "  fcntl.fcntl(r, fcntl.F_SETOWN, 1); print('setown OK')\n"
                         "except OSError as e: print('setown', e.errno)\n"
                         "b = os.open('/usr/bin/base64', os.O_RDONLY); os.fstat(b)\n"
                         "fcntl.fcntl(b, 37, struct.pack('hhqqi4x', fcntl.F_RDLCK, 0, 0, 0, 0))\n"
                         "print('ofd OK', flush=True)\n"});
  Finished f = Collect(c, 30);
  EXPECT_EQ(f.exit_code, 0) << f.err;
  EXPECT_NE(f.out.find("setown 1\n"), std::string::npos) << f.out << f.err;  // EPERM
  EXPECT_NE(f.out.find("ofd OK"), std::string::npos) << f.out << f.err;
}

}  // namespace
}  // namespace sentry::limits
