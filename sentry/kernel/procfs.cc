#include "sentry/kernel/procfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sentry/kernel/procfs_internal.h"
#include "sentry/kernel/sysfs.h"

namespace sentry {
namespace {

using vfs::NodeKind;
using vfs::NodeRef;
using namespace procfs;  // NOLINT: the parts of /proc (procfs_internal.h)

class Procfs {
 public:
  explicit Procfs(Kernel& k) : k_(k) {}

  NodeRef Dir(const std::string& key, std::function<NodeRef(const std::string&)> lookup,
              std::function<std::vector<std::string>()> names) {
    NodeRef d = k_.vfs().NewNode(NodeKind::kDir, S_IFDIR | 0555, 0, 0);
    d->attr().ino = InoFor(key);
    d->lookup = std::move(lookup);
    d->names = std::move(names);
    return d;
  }
  NodeRef File(const std::string& key, std::function<std::string()> gen, mode_t mode = 0444) {
    NodeRef f = k_.vfs().NewNode(NodeKind::kSynthetic, S_IFREG | mode, 0, 0);
    f->attr().ino = InoFor(key);
    f->generate = std::move(gen);
    f->sized = false;
    return f;
  }
  NodeRef Link(const std::string& key, std::string target) {
    NodeRef l = k_.vfs().NewNode(NodeKind::kSymlink, S_IFLNK | 0777, 0, 0);
    l->attr().ino = InoFor(key);
    l->target = std::move(target);
    return l;
  }

  static NodeRef Magic(NodeRef link) {
    link->magic = true;
    return link;
  }

  pid_t SelfPid() const { return k_.current ? k_.current->process->ns_pid : 1; }
  pid_t SelfTid() const { return k_.current ? k_.current->ns_tid : 1; }

  // The process the sandbox calls ns_pid, if it is alive.
  std::shared_ptr<Process> ProcessByNs(pid_t ns_pid) {
    for (auto& [tgid, p] : k_.tasks().Processes())
      if (p->ns_pid == ns_pid) return p;
    return nullptr;
  }

  NodeRef Root() {
    return Dir(
        "/proc", [this](const std::string& n) { return RootChild(n); },
        [this] {
          std::vector<std::string> names = {
              "self",    "thread-self", "cpuinfo",   "meminfo",     "stat",       "uptime",
              "loadavg", "version",     "mounts",    "filesystems", "sys",        "cgroups",
              "net",     "vmstat",      "diskstats", "swaps",       "interrupts", "pressure"};
          for (auto& [tgid, p] : k_.tasks().Processes()) {
            names.push_back(std::to_string(p->ns_pid));
          }
          return names;
        });
  }

  NodeRef RootChild(const std::string& n) {
    if (n == "self") return Link("/proc/self", std::to_string(SelfPid()));
    if (n == "thread-self") {
      return Link("/proc/thread-self", absl::StrCat(SelfPid(), "/task/", SelfTid()));
    }
    if (n == "mounts") return Link("/proc/mounts", "self/mounts");
    if (n == "net") return Link("/proc/net", "self/net");
    if (n == "cpuinfo") return File(n, [this] { return Cpuinfo(k_); });
    if (n == "cgroups") return File(n, [] { return SandboxCgroupControllers(); });
    if (n == "meminfo") return File(n, [this] { return Meminfo(k_); });
    if (n == "stat") return File(n, [this] { return Stat(k_); });
    if (n == "uptime") return File(n, [] { return Uptime(); });
    if (n == "vmstat") return File(n, [this] { return Vmstat(k_); });
    if (n == "diskstats") return File(n, [] { return Diskstats(); });
    if (n == "swaps") return File(n, [] { return Swaps(); });
    if (n == "interrupts") return File(n, [this] { return Interrupts(k_); });
    if (n == "pressure") {
      return Dir(
          "/proc/pressure",
          [this](const std::string& m) -> NodeRef {
            if (m != "cpu" && m != "memory" && m != "io") return nullptr;
            return File("/proc/pressure/" + m, [] { return Pressure(); });
          },
          [] {
            return std::vector<std::string>{"cpu", "io", "memory"};
          });
    }
    if (n == "loadavg") {
      return File(n, [this] {
        return absl::StrCat("0.00 0.00 0.00 1/", k_.tasks().size(), " ", SelfPid(), "\n");
      });
    }
    if (n == "version") {
      return File(n, [] {
        utsname u;
        uname(&u);
        return absl::StrCat("Linux version ", u.release, " (sandbox) #1 SMP\n");
      });
    }
    if (n == "filesystems") return File(n, [] { return "nodev\ttmpfs\nnodev\tproc\n"; });
    if (n == "sys") return SysNode("");
    pid_t pid = 0;
    if (absl::SimpleAtoi(n, &pid) && pid > 0) {
      if (auto p = ProcessByNs(pid)) return PidDir(p, pid);
    }
    return nullptr;
  }

  // /proc/sys/<path> (procfs_system.cc has the files).
  NodeRef SysNode(const std::string& path) {
    if (auto names = SysDir(path)) {
      return Dir(
          "/proc/sys/" + path,
          [this, path](const std::string& n) { return SysNode(path.empty() ? n : path + "/" + n); },
          [names = *names] { return names; });
    }
    if (!SysFile(k_, path)) return nullptr;
    return File("/proc/sys/" + path, [this, path] { return SysFile(k_, path).value_or(""); });
  }

  NodeRef PidDir(std::shared_ptr<Process> p, pid_t ns_pid) {
    std::string key = absl::StrCat("/proc/", ns_pid);
    // Owned by the process's uid, as the kernel shows them (so that a guest
    // reads its own environ, mode 0400).
    NodeRef d = Dir(
        key,
        [this, p, key](const std::string& n) {
          NodeRef node = PidChild(p, key, n);
          if (node) {
            node->attr().uid = p->creds.uid;
            node->attr().gid = p->creds.gid;
          }
          return node;
        },
        [] {
          std::vector<std::string> names = {"cgroup", "cmdline", "comm",   "cwd",   "environ",
                                            "exe",    "fd",      "fdinfo", "maps",  "mountinfo",
                                            "mounts", "net",     "root",   "sched", "smaps",
                                            "stat",   "status",  "task",   "wchan"};
          names.insert(names.end(), std::begin(kPassedThrough), std::end(kPassedThrough));
          std::sort(names.begin(), names.end());
          return names;
        });
    d->attr().uid = p->creds.uid;
    d->attr().gid = p->creds.gid;
    return d;
  }

  // Files of a guest process's own /proc directory shown as the host has
  // them: numbers about that process alone (its memory, limits, I/O counts,
  // mappings as its mount view names them), no host pid and no host path.
  // psutil's Process() reads them (statm at once, which loky's workers call).
  static constexpr const char* kPassedThrough[] = {"auxv",          "io",           "limits",
                                                   "oom_score_adj", "smaps_rollup", "statm"};

  std::string HostProc(const Process& p, const char* file) { return HostProcFile(k_, p, file); }

  NodeRef PidChild(std::shared_ptr<Process> p, const std::string& key, const std::string& n) {
    std::string k = key + "/" + n;
    if (n == "cmdline") return File(k, [this, p] { return HostProc(*p, "cmdline"); });
    if (n == "environ")
      return File(
          k, [this, p] { return HostProc(*p, "environ"); }, 0400);
    if (n == "comm") return File(k, [this, p] { return HostProc(*p, "comm"); });
    if (n == "maps") return File(k, [this, p] { return MapsOf(k_, *p, "maps"); });
    if (n == "smaps") return File(k, [this, p] { return MapsOf(k_, *p, "smaps"); });
    for (const char* name : kPassedThrough) {
      if (n == name) {
        mode_t mode = (n == "auxv" || n == "io") ? 0400 : 0444;
        return File(
            k, [this, p, name] { return HostProc(*p, name); }, mode);
      }
    }
    if (n == "stat") return File(k, [this, p] { return StatOf(k_, *p); });
    if (n == "status") return File(k, [this, p] { return StatusOf(k_, *p); });
    if (n == "wchan") return File(k, [this, p] { return WchanOf(k_, *p); });
    if (n == "sched") return File(k, [this, p] { return SchedOf(k_, *p); });
    if (n == "net") return NetDir(p, k);
    if (n == "fdinfo") return FdinfoDir(p, k);
    if (n == "mounts") return File(k, [] { return SandboxMounts(); });
    if (n == "mountinfo") return File(k, [] { return SandboxMountinfo(); });
    if (n == "cgroup") return File(k, [] { return SandboxCgroup(); });
    if (n == "root") return Magic(Link(k, "/"));
    if (n == "exe") return p->exe.empty() ? nullptr : Magic(Link(k, p->exe));
    if (n == "cwd") {
      for (const Task* t : k_.tasks().TasksOf(p.get())) {
        auto path = k_.vfs().PathOf(t->fs->cwd);
        return Magic(Link(k, path.ok() ? path.value() : "/"));
      }
      return nullptr;
    }
    if (n == "fd") return FdDir(p, k);
    if (n == "task") return TaskDir(p, k);
    return nullptr;
  }

  // The process's net/: its network namespace as the sandbox may see it.
  NodeRef NetDir(std::shared_ptr<Process> p, const std::string& key) {
    std::string k = key + "/net";
    return Dir(
        k,
        [this, p, k](const std::string& n) -> NodeRef {
          const auto& names = NetFileNames();
          if (std::find(names.begin(), names.end(), n) == names.end()) return nullptr;
          return File(k + "/" + n, [this, p, n] { return NetFile(k_, *p, n); });
        },
        [] { return NetFileNames(); });
  }

  // fdinfo/N for each fd the process has; readable by its owner alone, as
  // the kernel allows only a reader that may ptrace it.
  NodeRef FdinfoDir(std::shared_ptr<Process> p, const std::string& key) {
    std::string k = key + "/fdinfo";
    return Dir(
        k,
        [this, p, k](const std::string& n) -> NodeRef {
          int fd;
          if (!absl::SimpleAtoi(n, &fd) || fd < 0 || FdinfoOf(k_, *p, fd).empty()) return nullptr;
          NodeRef f = File(
              k + "/" + n, [this, p, fd] { return FdinfoOf(k_, *p, fd); }, 0400);
          f->attr().uid = p->creds.uid;
          f->attr().gid = p->creds.gid;
          return f;
        },
        [this, p] { return FdNames(p); });
  }

  std::vector<std::string> FdNames(std::shared_ptr<Process> p) {
    std::vector<std::string> names;
    UniqueFd proc = OpenHostProcDir(k_, *p);
    if (!proc) return names;
    UniqueFd fd = k_.proc_opener().OpenAt(proc.get(), "fd", O_DIRECTORY);
    if (DIR* d = fd ? fdopendir(fd.get()) : nullptr) {
      fd.Release();
      while (dirent* e = readdir(d))
        if (e->d_name[0] != '.') names.emplace_back(e->d_name);
      closedir(d);
    }
    return names;
  }

  NodeRef FdDir(std::shared_ptr<Process> p, const std::string& key) {
    std::string k = key + "/fd";
    auto fds = [this, p] { return FdNames(p); };
    return Dir(
        k,
        [this, p, k](const std::string& n) -> NodeRef {
          int fd;
          if (!absl::SimpleAtoi(n, &fd)) return nullptr;
          auto target = FdTarget(*p, fd);
          if (target.empty()) return nullptr;
          NodeRef l = Link(k + "/" + n, target);
          l->attr().mode = S_IFLNK | 0700;
          l->attr().uid = p->creds.uid;
          l->attr().gid = p->creds.gid;
          l->magic = true;
          if (target.rfind("pipe:", 0) == 0) l->object = PipeObject(p, fd);
          return l;
        },
        fds);
  }

  // What /proc/PID/fd/N points at: the sandbox path for donated objects, the
  // kernel's name for anonymous ones, and never a host path. Read on a copy
  // of the fd (GuestFdOf), which the sentry may take in every id mode.
  std::string FdTarget(const Process& p, int fd) {
    UniqueFd copy = GuestFdOf(k_, p, fd);
    struct stat st;
    if (!copy || fstat(copy.get(), &st) < 0) return "";
    if (const OpenObject* o = k_.fds().Find(st)) {
      if (!o->path.empty()) return o->path;
      if (o->node->IsDir()) {
        auto path = k_.vfs().PathOf(o->node);
        if (path.ok()) return path.value();
      }
    }
    char buf[4096];
    std::string self = absl::StrCat("/proc/self/fd/", copy.get());
    ssize_t n = readlink(self.c_str(), buf, sizeof(buf) - 1);
    if (n < 0) return "";
    std::string host(buf, n);
    // A pty of the sandbox's devpts, which lies outside the sentry's root.
    if (k_.pts_dev && S_ISCHR(st.st_mode) && st.st_dev == k_.pts_dev) {
      return "/dev/pts/" + host.substr(host.rfind('/') + 1);
    }
    for (const char* anon : {"pipe:", "socket:", "anon_inode:", "/dev/pts/", "/dev/null"}) {
      if (host.rfind(anon, 0) == 0) return host;
    }
    return "/dev/null";
  }

  // A pipe behind /proc/PID/fd/N: its stat as the guest sees it, and opening
  // it opens the pipe anew (bash's <(...) hands such paths to programs).
  NodeRef PipeObject(std::shared_ptr<Process> p, int fd) {
    struct stat st;
    UniqueFd copy = GuestFdOf(k_, *p, fd);
    if (!copy || fstat(copy.get(), &st) < 0 || !S_ISFIFO(st.st_mode)) return nullptr;
    const KernelConfig& c = k_.config();
    NodeRef n = k_.vfs().NewNode(NodeKind::kFifo, S_IFIFO | (st.st_mode & 07777),
                                 c.GuestUid(st.st_uid), c.GuestGid(st.st_gid));
    n->attr().ino = st.st_ino;
    n->attr().atime = st.st_atim;
    n->attr().mtime = st.st_mtim;
    n->attr().ctime = st.st_ctim;
    n->reopen = [this, p, fd](int flags) { return ReopenPipe(*p, fd, flags); };
    return n;
  }

  SysResult<UniqueFd> ReopenPipe(const Process& p, int fd, int flags) {
    UniqueFd copy = GuestFdOf(k_, p, fd);
    struct stat st;
    if (!copy || fstat(copy.get(), &st) < 0) return Errno{ENOENT};  // closed meanwhile
    if (!S_ISFIFO(st.st_mode)) return Errno{ENXIO};
    // The same pipe, a new open file description. The guest's permission
    // was checked on the node; non-blocking, so the sentry never waits for
    // the other end.
    UniqueFd out = k_.proc_opener().ReopenFifo(copy.get(), (flags & O_ACCMODE) | O_NONBLOCK);
    if (!out) return Errno{errno};
    if (!(flags & O_NONBLOCK)) fcntl(out.get(), F_SETFL, fcntl(out.get(), F_GETFL) & ~O_NONBLOCK);
    return out;
  }

  // /proc/PID/task/TID: the process's files, but for the thread's own
  // stat, status and comm (psutil's threads() reads each thread's times).
  NodeRef ThreadDir(std::shared_ptr<Process> p, pid_t host_tid, const std::string& key) {
    NodeRef d = PidDir(p, p->ns_pid);
    d->attr().ino = InoFor(key);
    auto process_child = d->lookup;
    d->lookup = [this, p, host_tid, key, process_child](const std::string& n) -> NodeRef {
      NodeRef f;
      std::string k = key + "/" + n;
      if (n == "stat") {
        f = File(k, [this, p, host_tid] { return StatOf(k_, *p, host_tid); });
      } else if (n == "status") {
        f = File(k, [this, p, host_tid] { return StatusOf(k_, *p, host_tid); });
      } else if (n == "comm") {
        f = File(k, [this, p, host_tid] {
          return HostProc(*p, absl::StrCat("task/", host_tid, "/comm").c_str());
        });
      } else {
        return process_child(n);
      }
      f->attr().uid = p->creds.uid;
      f->attr().gid = p->creds.gid;
      return f;
    };
    return d;
  }

  NodeRef TaskDir(std::shared_ptr<Process> p, const std::string& key) {
    std::string k = key + "/task";
    return Dir(
        k,
        [this, p, k](const std::string& n) -> NodeRef {
          pid_t tid;
          if (!absl::SimpleAtoi(n, &tid)) return nullptr;
          for (const Task* t : k_.tasks().TasksOf(p.get())) {
            if (t->ns_tid == tid) return ThreadDir(p, t->tid, k + "/" + n);
          }
          return nullptr;
        },
        [this, p] {
          std::vector<std::string> names;
          for (const Task* t : k_.tasks().TasksOf(p.get())) {
            names.push_back(std::to_string(t->ns_tid));
          }
          return names;
        });
  }

 private:
  Kernel& k_;
};

}  // namespace

void MountProcfs(Kernel& kernel, const vfs::NodeRef& proc_dir) {
  procfs::ResetBoot();
  // The Procfs object lives as long as the lambdas that capture it.
  static Procfs* procfs = nullptr;
  delete procfs;
  procfs = new Procfs(kernel);
  NodeRef root = procfs->Root();
  proc_dir->lookup = root->lookup;
  proc_dir->names = root->names;
}

}  // namespace sentry
