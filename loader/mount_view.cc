// The loader's mount view and network namespace (see loader_internal.h).
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "loader/loader_internal.h"

namespace sentry::loader_internal {
namespace {

// A bind mount's locked flags (atime, nosuid...) must be kept when it is made
// read-only inside a user namespace, else the remount fails with EPERM.
LOADER_CODE unsigned long KeptFlags(const char* path) {
  struct statvfs sv;
  if (statvfs(path, &sv) < 0) return 0;
  unsigned long f = 0;
  if (sv.f_flag & ST_NOSUID) f |= MS_NOSUID;
  if (sv.f_flag & ST_NODEV) f |= MS_NODEV;
  if (sv.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
  if (sv.f_flag & ST_NOATIME) f |= MS_NOATIME;
  if (sv.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
  if (sv.f_flag & ST_RELATIME) f |= MS_RELATIME;
  return f;
}

// A system call that leaves errno alone: DetachOldRoot shares the loader's
// memory, its thread-local errno included, and runs beside it.
LOADER_CODE long RawSyscall(long nr, long a1, long a2 = 0, long a3 = 0, long a4 = 0, long a5 = 0) {
  long ret;
  register long r10 asm("r10") = a4;
  register long r8 asm("r8") = a5;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8)
               : "rcx", "r11", "memory");
  return ret;
}

// The view's root made read-only, its other flags as BuildMountView made it.
constexpr unsigned long kRootRemountFlags =
    MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOATIME;

// What the helper writes on the gate when a step failed (nothing otherwise).
struct DetachOutcome {
  int32_t step;
  int32_t err;
};

// The helper: the old root (the host's whole tree, as pivot_root left it at
// /.old) detached and its directory removed, then the view made read-only.
// umount2 waits for an RCU grace period (namespace_unlock), the longest step
// of the view (0.1-10 ms measured here, most on a loaded host). Raw calls
// only (see RawSyscall); it keeps no fd but the gate's write end, whose
// close at its exit is the guest's go (AwaitDetach).
LOADER_CODE int DetachOldRoot(void* arg) {
  const Prepared& p = *static_cast<const Prepared*>(arg);
  const int gate = p.detach_gate_write;
  if (gate > 3) RawSyscall(SYS_close_range, 3, gate - 1, 0);
  RawSyscall(SYS_close_range, gate + 1, ~0U, 0);
  // Off the CPU the guest was moved to (LoaderSpec::guest_cpu), where the
  // guest and the sentry work meanwhile: on the loader's own.
  RawSyscall(SYS_sched_setaffinity, 0, sizeof(p.detach_cpus),
             reinterpret_cast<long>(&p.detach_cpus));
  if (p.spec->detach_delay_ms > 0) {
    timespec delay{p.spec->detach_delay_ms / 1000, (p.spec->detach_delay_ms % 1000) * 1000000L};
    RawSyscall(SYS_nanosleep, reinterpret_cast<long>(&delay), 0);
  }
  DetachOutcome out{0, 0};
  long r = RawSyscall(SYS_umount2, reinterpret_cast<long>("/.old"), MNT_DETACH);
  if (r == 0) r = RawSyscall(SYS_rmdir, reinterpret_cast<long>("/.old"));
  if (r < 0) {
    out = {static_cast<int32_t>(LoaderStep::kPivotRoot), static_cast<int32_t>(-r)};
  } else {
    // The guest walks the view meanwhile (its Landlock rules, its
    // terminal): should anything hold a write on the root for a moment,
    // the remount is tried again (at most ~20 ms).
    for (int tries = 0; tries < 200; ++tries) {
      r = RawSyscall(SYS_mount, 0, reinterpret_cast<long>("/"), 0, kRootRemountFlags, 0);
      if (r != -EBUSY) break;
      timespec pause{0, 100000};
      RawSyscall(SYS_nanosleep, reinterpret_cast<long>(&pause), 0);
    }
    if (r < 0) out = {static_cast<int32_t>(LoaderStep::kRemountRoot), static_cast<int32_t>(-r)};
  }
  if (out.err != 0) RawSyscall(SYS_write, gate, reinterpret_cast<long>(&out), sizeof(out));
  return 0;
}

// fd moved to the lowest number above the guest's extra fds (3, 4, ...,
// which PlaceExtraFds overwrites), close-on-exec; -1 on failure.
LOADER_CODE int AboveExtraFds(const Prepared& p, int fd) {
  int above = 3 + static_cast<int>(p.spec->extra_fds.size());
  if (fd < 0 || fd >= above) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, above);
  close(fd);
  return moved;
}

}  // namespace

LOADER_CODE void StartDetach(Prepared& p) {
  int gate[2];
  if (pipe2(gate, O_CLOEXEC) == 0) {
    p.detach_gate = AboveExtraFds(p, gate[0]);
    p.detach_gate_write = AboveExtraFds(p, gate[1]);
    if (p.detach_gate >= 0 && p.detach_gate_write >= 0 &&
        clone(DetachOldRoot, p.detach_stack_top, CLONE_VM | CLONE_PARENT | SIGCHLD, &p) > 0) {
      // (The field stays: the helper may not have read it yet.)
      close(p.detach_gate_write);
      return;
    }
    if (p.detach_gate >= 0) close(p.detach_gate);
    if (p.detach_gate_write >= 0) close(p.detach_gate_write);
    p.detach_gate = p.detach_gate_write = -1;
  }
  if (umount2("/.old", MNT_DETACH) < 0 || rmdir("/.old") < 0) Fail(p, LoaderStep::kPivotRoot);
  if (mount(nullptr, "/", nullptr, kRootRemountFlags, nullptr) < 0) {
    Fail(p, LoaderStep::kRemountRoot);
  }
}

LOADER_CODE void BuildMountView(Prepared& p) {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) {
    Fail(p, LoaderStep::kMountPrivate);
  }
  // The lower roots are opened before the new root's tmpfs goes over
  // kNewRoot: a bundle's rootfs may lie beneath it (/tmp/bundle/rootfs).
  for (size_t i = 0; i < p.host_paths.size(); ++i) {
    if (!p.link_targets[i].empty()) continue;
    p.source_fds[i] = open(p.host_paths[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (p.source_fds[i] < 0) Fail(p, LoaderStep::kBindLower);
  }
  // noatime: a path walk through one of its symlinks (/lib64 -> usr/lib64)
  // would otherwise update the link's atime, a write that makes the
  // read-only remount beside it fail with EBUSY (see DetachOldRoot).
  if (mount("sentry-root", kNewRoot, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOATIME,
            "mode=0755,size=64k") < 0) {
    Fail(p, LoaderStep::kMountRoot);
  }
  for (size_t i = 0; i < p.host_paths.size(); ++i) {
    const char* view = p.view_paths[i].c_str();
    if (!p.link_targets[i].empty()) {
      if (symlink(p.link_targets[i].c_str(), view) < 0) Fail(p, LoaderStep::kBindLower);
      continue;
    }
    char source[32] = "/proc/self/fd/";
    FormatDecimal(p.source_fds[i], source + 14);
    if (mkdir(view, 0755) < 0 || mount(source, view, nullptr, MS_BIND | MS_REC, nullptr) < 0 ||
        mount(nullptr, view, nullptr,
              MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | KeptFlags(view),
              nullptr) < 0) {
      Fail(p, LoaderStep::kBindLower);
    }
    close(p.source_fds[i]);
  }
  // noatime: a native read of an upper file changes none of its answers, so
  // one no writer holds can be published (vfs/store_writers.cc).
  if (mkdir(p.store_path.c_str(), 0755) < 0 ||
      mount("sentry-store", p.store_path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOATIME,
            p.spec->store_options.c_str()) < 0) {
    Fail(p, LoaderStep::kMountStore);
  }
  // The sandbox's own pseudo-terminals: a private devpts instance, which the
  // sentry serves as /dev/pts and /dev/ptmx. Optional: without it, no ptys.
  if (mkdir(p.pts_path.c_str(), 0755) == 0) {
    mount("sentry-pts", p.pts_path.c_str(), "devpts", MS_NOSUID | MS_NOEXEC, p.pts_options.c_str());
  }
  if (mkdir("/tmp/.old", 0700) < 0 || syscall(SYS_pivot_root, kNewRoot, "/tmp/.old") < 0 ||
      chdir("/") < 0) {
    Fail(p, LoaderStep::kPivotRoot);
  }
  // The old root stays at /.old until the guest's StartDetach.
}

LOADER_CODE void AwaitDetach(const Prepared& p) {
  if (p.detach_gate < 0) return;
  DetachOutcome out;
  ssize_t n;
  do {
    n = read(p.detach_gate, &out, sizeof(out));
  } while (n < 0 && errno == EINTR);
  if (n == 0) return;  // the helper is gone, and said nothing: done
  errno = n == sizeof(out) ? out.err : EIO;
  Fail(p, n == sizeof(out) ? static_cast<LoaderStep>(out.step) : LoaderStep::kPivotRoot);
}

// The new network namespace's loopback up, and the DNS server's socket
// bound there and sent to the sentry (see NetnsMade): made here, in the
// namespace, the sentry needs no thread of its own to enter it. (The message
// is built by hand, not with sentry/base/fd_passing.h: what runs here stays
// uninstrumented, see LOADER_CODE.)
LOADER_CODE void ReadyNetns(const Prepared& p) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) Fail(p, LoaderStep::kLoopback);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) Fail(p, LoaderStep::kLoopback);
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) Fail(p, LoaderStep::kLoopback);
  NetnsMade made;
  sockaddr_in dns{};
  dns.sin_family = AF_INET;
  dns.sin_port = htons(kDnsPort);
  dns.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s, reinterpret_cast<sockaddr*>(&dns), sizeof(dns)) < 0) made.dns_err = errno;
  iovec iov{&made, sizeof(made)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (made.dns_err == 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &s, sizeof(int));
  }
  // Should the sentry be gone, the read of its "c" ends the loader.
  (void)!sendmsg(p.pipes.maps_read, &msg, MSG_NOSIGNAL);
  close(s);
}

}  // namespace sentry::loader_internal
