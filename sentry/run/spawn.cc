#include "sentry/run/spawn.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <span>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/base/fd_passing.h"
#include "sentry/base/small_file.h"
#include "sentry/base/status_macros.h"
#include "sentry/base/timeline.h"
#include "vfs/store.h"

namespace sentry {
namespace {

absl::Status WriteFile(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(absl::StrCat("open ", path));
  UniqueFd f(fd);
  if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return ErrnoStatus(absl::StrCat("write ", path));
  }
  return absl::OkStatus();
}

absl::Status StepError(const LoaderMessage& m) {
  if (m.step == LoaderStep::kIdMaps) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the user namespace wall: this kernel let uid ", getuid(),
        " make a user namespace but not map its own ids in it (", std::strerror(m.err),
        "); choices: a subordinate range (`usermod --add-subuids 100000-165535 "
        "--add-subgids 100000-165535 USER`, with newuidmap installed), or --no-namespaces"));
  }
  return absl::InternalError(absl::StrCat("the sandbox could not start: ", LoaderStepName(m.step),
                                          ": ", std::strerror(m.err)));
}

}  // namespace

absl::StatusOr<IdSlot> TakeSandboxIdSlot() {
  if (mkdir("/run/sentry", 0755) < 0 && errno != EEXIST) {
    return IdSlot::Take("/dev/shm/sentry-ids", kFirstSlotId, kIdSlots);
  }
  auto slot = IdSlot::Take("/run/sentry/ids", kFirstSlotId, kIdSlots);
  if (slot.ok() || slot.status().code() == absl::StatusCode::kResourceExhausted) return slot;
  return IdSlot::Take("/dev/shm/sentry-ids", kFirstSlotId, kIdSlots);
}

absl::StatusOr<Spawned> Spawned::Start(const LoaderSpec& spec, const SubidPlan* subids,
                                       const cpu_set_t* loader_cpus) {
  if (spec.namespaces && spec.helper_maps && !subids) {
    return absl::InternalError("helper maps without a subordinate range");
  }
  int maps[2], report[2], go[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, maps) < 0 ||
      pipe2(report, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0) {
    return ErrnoStatus("pipe");
  }
  UniqueFd maps_r(maps[0]), report_w(report[1]), go_r(go[0]);
  Spawned s;
  s.namespaces_ = spec.namespaces;
  s.maps_ = UniqueFd(maps[1]);
  s.report_ = UniqueFd(report[0]);
  s.go_ = UniqueFd(go[1]);
  LoaderPipes pipes{maps[0], report[1], go[0]};
  int flags = spec.namespaces ? kLoaderCloneNamespaces : 0;
  timeline::Mark("spawn.clone");
  pid_t pid = StartLoader(spec, pipes, flags);
  timeline::Mark("spawn.cloned");
  if (pid < 0) {
    std::string choices;
    if (getuid() != 0) {
      // What lets an ordinary user make them (user_namespaces(7)).
      choices =
          " (without root this needs unprivileged user namespaces: sysctl "
          "kernel.unprivileged_userns_clone=1 where that exists, user.max_user_namespaces > 0, "
          "and no AppArmor restrict_unprivileged_userns; or --no-namespaces)";
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "the kernel refused the sandbox's namespaces: ", std::strerror(-pid), choices));
  }
  s.init_pid_ = pid;
  // (A refusal leaves it on the caller's CPUs: slower, no less walled.)
  if (loader_cpus) sched_setaffinity(pid, sizeof(*loader_cpus), loader_cpus);
  maps_r.Reset();
  report_w.Reset();
  go_r.Reset();
  std::string proc = absl::StrCat("/proc/", pid);
  // ns 0 is pid 1's; the guest's own id (when not 0) maps to the next host id.
  // nobody/nogroup map too, to a host id nothing owns, so that asking to
  // become them fails with EPERM as for an unprivileged user, not EINVAL.
  const uid_t base = spec.host_ids != 0 ? spec.host_ids : kHostIdBase;
  auto map = [base](unsigned id, std::span<const gid_t> extra) {
    std::string m = absl::StrCat("0 ", base, " 1\n");
    if (id != 0 && id != kNobodyId) absl::StrAppend(&m, id, " ", base + 1, " 1\n");
    absl::StrAppend(&m, kNobodyId, " ", base + 2, " 1\n");
    std::set<unsigned> done = {0, id, kNobodyId};
    for (size_t i = 0; i < extra.size() && i < kMaxGuestGroups; ++i) {
      if (!done.insert(extra[i]).second) continue;
      absl::StrAppend(&m, extra[i], " ", base + 3 + i, " 1\n");
    }
    return m;
  };
  // (In single-id mode the loader maps its own ids: see LoaderSpec::single_id.)
  if (spec.namespaces && spec.helper_maps) {
    char ready = 0;
    if (read(s.maps_.get(), &ready, 1) != 1 || ready != 'd') {
      ASSIGN_OR_RETURN(LoaderMessage m, s.ReadMessage());
      return StepError(m);
    }
    if (absl::Status mapped = MapWithHelpers(pid, *subids); !mapped.ok()) {
      // Not left a zombie: a run with --userns=auto goes on in single-id mode.
      kill(pid, SIGKILL);
      while (waitpid(pid, nullptr, __WALL) < 0 && errno == EINTR) {
      }
      return mapped;
    }
  } else if (spec.namespaces && !spec.single_id) {
    RETURN_IF_ERROR(WriteFile(proc + "/uid_map", map(spec.uid, {})));
    RETURN_IF_ERROR(WriteFile(proc + "/gid_map", map(spec.gid, spec.groups)));
  }
  timeline::Mark("spawn.mapped");
  if (send(s.maps_.get(), "m", 1, MSG_NOSIGNAL) != 1) {
    // The loader failed meanwhile (with helper maps it makes its network
    // namespace while they run): its report says where.
    ASSIGN_OR_RETURN(LoaderMessage m, s.ReadMessage());
    return StepError(m);
  }
  return s;
}

absl::Status Spawned::SendCgroups(const std::array<UniqueFd, kMaxLoaderCgroups>& tasks_files) {
  int fds[kMaxLoaderCgroups];
  size_t n = 0;
  for (int i = 0; i < kMaxLoaderCgroups; ++i) {
    if (!tasks_files[i]) continue;
    sent_as_[n] = i;  // the loader numbers only the files it got
    fds[n++] = tasks_files[i].get();
  }
  char byte = 'c';
  if (SendWithFds(maps_.get(), &byte, 1, std::span<const int>(fds, n)) != 1) {
    return ErrnoStatus("signal the loader");
  }
  if (!namespaces_) maps_.Reset();  // else the loader's NetnsMade is still to come
  return absl::OkStatus();
}

absl::Status Spawned::AwaitNetns() {
  if (!namespaces_) return absl::OkStatus();
  NetnsMade made;
  made.tag = 0;
  std::array<UniqueFd, 1> socket;
  ssize_t n = ReceiveWithFds(maps_.get(), &made, sizeof(made), socket).bytes;
  maps_.Reset();
  if (n != sizeof(made) || made.tag != 'n') {
    // The loader failed before (end of file here): its report says where.
    ASSIGN_OR_RETURN(LoaderMessage m, ReadMessage());
    return StepError(m);
  }
  if (made.dns_err != 0) {
    dns_socket_ = Errno{made.dns_err};
  } else if (socket[0]) {
    dns_socket_ = std::move(socket[0]);
  }
  return absl::OkStatus();
}

absl::Status Spawned::AwaitReady() {
  ASSIGN_OR_RETURN(LoaderMessage m, ReadMessage());
  if (m.step != LoaderStep::kReady) return StepError(m);
  for (int k = 0; k < kMaxLoaderCgroups; ++k) {
    if (m.value & (1 << k)) cgroups_refused_ |= 1 << sent_as_[k];
  }
  if (!namespaces_) return absl::OkStatus();  // no mount view: the run made its store on the host
  std::string proc = absl::StrCat("/proc/", init_pid_);
  int store =
      open((proc + "/root" + vfs::Store::kGuestPath).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (store < 0) return ErrnoStatus("open the backing store");
  store_dir_ = UniqueFd(store);
  pts_dir_ = UniqueFd(open((proc + "/root" + kGuestPtsPath).c_str(),
                           O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct statfs pts_fs;
  if (pts_dir_ && (fstatfs(pts_dir_.get(), &pts_fs) < 0 || pts_fs.f_type != DEVPTS_SUPER_MAGIC)) {
    pts_dir_.Reset();  // the mount failed: an empty directory, no ptys
  }
  return absl::OkStatus();
}

absl::StatusOr<LoaderMessage> Spawned::ReadMessage() {
  LoaderMessage m;
  ssize_t n = read(report_.get(), &m, sizeof(m));
  if (n != sizeof(m)) {
    return absl::InternalError("the sandbox could not start: its loader exited early");
  }
  return m;
}

absl::Status Spawned::AwaitGuest() {
  ASSIGN_OR_RETURN(LoaderMessage m, ReadMessage());
  if (m.step != LoaderStep::kListener) return StepError(m);
  // The guest is pid 1's first child (a second, until pid 1 reaps it after
  // the guest's execve, is the old root's detach, which the guest started:
  // see StartDetach); /proc shows them in the order they were made, with
  // their host pids.
  std::string children =
      ReadFileText(absl::StrCat("/proc/", init_pid_, "/task/", init_pid_, "/children"), 4096);
  std::vector<absl::string_view> pids = absl::StrSplit(children, ' ', absl::SkipWhitespace());
  if (pids.empty() || !absl::SimpleAtoi(pids[0], &guest_pid_) || guest_pid_ <= 0) {
    return absl::InternalError("cannot find the guest process");
  }
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, guest_pid_, 0));
  if (pidfd < 0) return ErrnoStatus("pidfd_open the guest");
  UniqueFd pf(pidfd);
  int listener = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, m.value, 0));
  if (listener < 0) return ErrnoStatus("take the guest's seccomp listener");
  listener_ = UniqueFd(listener);
  if (m.tty_master >= 0) {
    int master = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, m.tty_master, 0));
    if (master < 0) return ErrnoStatus("take the guest's terminal");
    tty_master_ = UniqueFd(master);
    // What the loader opened: the devpts instance's ptmx (5:2), nothing else.
    struct stat st;
    if (fstat(master, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(5, 2)) {
      return absl::InternalError("the guest's terminal is not a pty master");
    }
  }
  return absl::OkStatus();
}

absl::Status Spawned::Go(const GuestLaunch& launch) {
  std::string msg = EncodeGuestLaunch(launch);
  if (msg.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the command line and environment are too large (at most ",
                     kMaxLaunchBytes >> 20, " MiB and ", kMaxLaunchStrings, " strings)"));
  }
  size_t done = 0;
  while (done < msg.size()) {
    ssize_t n = write(go_.get(), msg.data() + done, msg.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoStatus("start the guest");
    done += static_cast<size_t>(n);
  }
  go_.Reset();
  return absl::OkStatus();
}

}  // namespace sentry
