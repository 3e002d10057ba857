#include "sentry/kernel/procfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
#include "sentry/base/fs_identity.h"
#include "sentry/kernel/sysfs.h"

namespace sentry {
namespace {

using vfs::NodeKind;
using vfs::NodeRef;

std::string ReadHostFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string ReadAllFd(int fd) {
  std::string out;
  char buf[1 << 14];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (16u << 20)) break;  // maps of a huge process: enough
  }
  return out;
}

// The host /proc directory of a guest process, opened as the sentry itself (a
// root guest's fd/ and environ are closed to the unprivileged fsuid of the
// notification thread) and only if it is still that process: the check comes
// after the open, through a pidfd that pins the process, so a host pid
// reused meanwhile is never read.
UniqueFd OpenHostProcDir(Kernel& k, const Process& p) {
  for (const Task* t : k.tasks().TasksOf(&p)) {
    UniqueFd dir;
    {
      SentryFsIdentity as_sentry;
      dir = UniqueFd(open(absl::StrCat("/proc/", p.tgid).c_str(),
                          O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    if (!dir || syscall(SYS_pidfd_send_signal, t->pidfd.get(), 0, nullptr, 0) < 0) return {};
    return dir;
  }
  return {};
}

// Stable inode numbers for generated nodes, so two stats of one path agree.
uint64_t InoFor(const std::string& key) {
  return (std::hash<std::string>{}(key)&0xffffffffull) | (1ull << 34);
}

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

  std::string MapPid(const std::string& host) {
    int h = 0;
    if (!absl::SimpleAtoi(host, &h) || h == 0) return "0";
    if (h == k_.init_host_pid) return "1";
    return std::to_string(k_.tasks().NsPidOfHost(h));
  }

  NodeRef Root() {
    return Dir(
        "/proc", [this](const std::string& n) { return RootChild(n); },
        [this] {
          std::vector<std::string> names = {"self",   "thread-self", "cpuinfo", "meminfo",
                                            "stat",   "uptime",      "loadavg", "version",
                                            "mounts", "filesystems", "sys",     "cgroups"};
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
    if (n == "cpuinfo") return File(n, [this] { return Cpuinfo(); });
    if (n == "cgroups") return File(n, [] { return SandboxCgroupControllers(); });
    if (n == "meminfo") return File(n, [this] { return Meminfo(); });
    if (n == "stat") return File(n, [this] { return Stat(); });
    if (n == "uptime") return File(n, [] { return Uptime(); });
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
    if (n == "sys") return Sys();
    pid_t pid = 0;
    if (absl::SimpleAtoi(n, &pid) && pid > 0) {
      if (auto p = ProcessByNs(pid)) return PidDir(p, pid);
    }
    return nullptr;
  }

  std::string Meminfo() {
    uint64_t total = k_.config().memory_bytes ? k_.config().memory_bytes : 1ull << 30;
    uint64_t kb = total >> 10;
    return absl::StrCat("MemTotal:       ", kb, " kB\nMemFree:        ", kb / 2,
                        " kB\nMemAvailable:   ", kb / 2,
                        " kB\nBuffers:               0 kB\nCached:                0 kB\n"
                        "SwapTotal:             0 kB\nSwapFree:              0 kB\n");
  }

  // The host's, less the processors the sandbox does not show (sysfs.h).
  std::string Cpuinfo() {
    cpu_set_t shown = k_.config().ShownCpus();
    std::string out;
    for (const std::string& block :
         std::vector<std::string>(absl::StrSplit(ReadHostFile("/proc/cpuinfo"), "\n\n"))) {
      // "processor\t: N" opens each processor's block.
      int cpu = -1;
      if (sscanf(block.c_str(), "processor : %d", &cpu) != 1 || cpu < 0 || cpu >= CPU_SETSIZE ||
          !CPU_ISSET(cpu, &shown)) {
        continue;
      }
      absl::StrAppend(&out, block, "\n\n");
    }
    return out;
  }

  std::string Stat() {
    cpu_set_t shown = k_.config().ShownCpus();
    std::string out = "cpu  0 0 0 0 0 0 0 0 0 0\n";
    for (int i = 0; i < CPU_SETSIZE; ++i) {
      if (CPU_ISSET(i, &shown)) absl::StrAppend(&out, "cpu", i, " 0 0 0 0 0 0 0 0 0 0\n");
    }
    absl::StrAppend(&out, "intr 0\nctxt 0\nbtime ", time(nullptr),
                    "\nprocesses 0\nprocs_running 1\nprocs_blocked 0\n");
    return out;
  }

  static std::string Uptime() {
    static const timespec start = [] {
      timespec t;
      clock_gettime(CLOCK_MONOTONIC, &t);
      return t;
    }();
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double up = (now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
    char buf[64];
    snprintf(buf, sizeof(buf), "%.2f %.2f\n", up, up);
    return buf;
  }

  NodeRef Sys() {
    auto file = [this](const std::string& key, std::string text) {
      return File(key, [text] { return text; });
    };
    utsname u;
    uname(&u);
    std::string release = u.release;
    auto kernel = [this, file, release](const std::string& n) -> NodeRef {
      if (n == "osrelease") return file("sys/kernel/osrelease", release + "\n");
      if (n == "ostype") return file("sys/kernel/ostype", "Linux\n");
      if (n == "hostname") return file("sys/kernel/hostname", k_.config().hostname + "\n");
      if (n == "pid_max") return file("sys/kernel/pid_max", "4194304\n");
      if (n == "ngroups_max") return file("sys/kernel/ngroups_max", "65536\n");
      return nullptr;
    };
    auto kernel_dir = [this, kernel] {
      return Dir("/proc/sys/kernel", kernel, [] {
        return std::vector<std::string>{"hostname", "ngroups_max", "osrelease", "ostype",
                                        "pid_max"};
      });
    };
    auto vm = [this, file] {
      return Dir(
          "/proc/sys/vm",
          [file](const std::string& n) -> NodeRef {
            if (n == "overcommit_memory") return file("sys/vm/overcommit", "0\n");
            return nullptr;
          },
          [] { return std::vector<std::string>{"overcommit_memory"}; });
    };
    return Dir(
        "/proc/sys",
        [kernel_dir, vm](const std::string& n) -> NodeRef {
          if (n == "kernel") return kernel_dir();
          if (n == "vm") return vm();
          return nullptr;
        },
        [] {
          return std::vector<std::string>{"kernel", "vm"};
        });
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
          std::vector<std::string> names = {"cgroup", "cmdline", "comm",   "cwd",       "environ",
                                            "exe",    "fd",      "maps",   "mountinfo", "mounts",
                                            "root",   "stat",    "status", "task"};
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
  static constexpr const char* kPassedThrough[] = {
      "auxv", "io", "limits", "oom_score_adj", "smaps", "smaps_rollup", "statm", "wchan"};

  std::string HostProc(const Process& p, const char* file) {
    UniqueFd dir = OpenHostProcDir(k_, p);
    if (!dir) return "";
    SentryFsIdentity as_sentry;
    UniqueFd f(openat(dir.get(), file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    return f ? ReadAllFd(f.get()) : "";
  }

  NodeRef PidChild(std::shared_ptr<Process> p, const std::string& key, const std::string& n) {
    std::string k = key + "/" + n;
    if (n == "cmdline") return File(k, [this, p] { return HostProc(*p, "cmdline"); });
    if (n == "environ")
      return File(
          k, [this, p] { return HostProc(*p, "environ"); }, 0400);
    if (n == "comm") return File(k, [this, p] { return HostProc(*p, "comm"); });
    if (n == "maps") return File(k, [this, p] { return HostProc(*p, "maps"); });
    for (const char* name : kPassedThrough) {
      if (n == name) {
        mode_t mode = (n == "auxv" || n == "io") ? 0400 : 0444;
        return File(
            k, [this, p, name] { return HostProc(*p, name); }, mode);
      }
    }
    if (n == "stat") return File(k, [this, p] { return StatOf(*p); });
    if (n == "status") return File(k, [this, p] { return StatusOf(*p); });
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

  // Rewrites the pid fields of a host stat line (pid, ppid, pgrp, session, tpgid).
  std::string StatOf(const Process& p) {
    std::string s = HostProc(p, "stat");
    size_t close = s.rfind(')');
    if (close == std::string::npos) return s;
    std::vector<std::string> f = absl::StrSplit(s.substr(close + 2), ' ');
    // f[0] state, f[1] ppid, f[2] pgrp, f[3] session, f[4] tty, f[5] tpgid
    if (!f.empty() && f[0] == "t") f[0] = "T";  // see StatusOf
    for (int i : {1, 2, 3, 5})
      if (i < static_cast<int>(f.size())) f[i] = MapPid(f[i]);
    return absl::StrCat(p.ns_pid, " ", s.substr(s.find('('), close - s.find('(') + 1), " ",
                        absl::StrJoin(f, " "));
  }

  std::string StatusOf(const Process& p) {
    std::string out;
    const vfs::Creds& c = p.creds;
    for (absl::string_view line : absl::StrSplit(HostProc(p, "status"), '\n')) {
      if (line.empty()) continue;
      std::string l(line);
      auto field = [&](const char* name) { return l.rfind(name, 0) == 0; };
      auto value = [&](absl::string_view v) {
        return absl::StrCat(l.substr(0, l.find(':') + 1), "\t", v);
      };
      if (field("Pid:") || field("Tgid:") || field("NStgid:") || field("NSpid:")) {
        l = value(std::to_string(p.ns_pid));
      } else if (field("PPid:")) {
        l = value(MapPid(std::string(absl::StripAsciiWhitespace(l.substr(5)))));
      } else if (field("Umask:")) {
        for (const Task* t : k_.tasks().TasksOf(&p)) {
          char buf[8];
          snprintf(buf, sizeof(buf), "%04o", t->fs->umask);
          l = value(buf);
          break;
        }
      } else if (field("State:")) {
        // The guest is never a tracer (ptrace is EPERM), so a tracing stop
        // is the sentry's own: a stopped process shows as one.
        if (l.find("t (tracing stop)") != std::string::npos) l = value("T (stopped)");
      } else if (field("TracerPid:")) {
        l = value("0");
      } else if (field("Uid:")) {
        l = value(absl::StrCat(c.uid, "\t", c.uid, "\t", c.uid, "\t", c.uid));
      } else if (field("Gid:")) {
        l = value(absl::StrCat(c.gid, "\t", c.gid, "\t", c.gid, "\t", c.gid));
      } else if (field("Groups:")) {
        l = value("");
      } else if (field("NSpgid:") || field("NSsid:")) {
        continue;
      }
      absl::StrAppend(&out, l, "\n");
    }
    return out;
  }

  NodeRef FdDir(std::shared_ptr<Process> p, const std::string& key) {
    std::string k = key + "/fd";
    auto fds = [this, p] {
      std::vector<std::string> names;
      UniqueFd proc = OpenHostProcDir(k_, *p);
      if (!proc) return names;
      SentryFsIdentity as_sentry;
      int fd = openat(proc.get(), "fd", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (DIR* d = fd >= 0 ? fdopendir(fd) : nullptr) {
        while (dirent* e = readdir(d))
          if (e->d_name[0] != '.') names.emplace_back(e->d_name);
        closedir(d);
      } else if (fd >= 0) {
        close(fd);
      }
      return names;
    };
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
  // kernel's name for anonymous ones, and never a host path.
  std::string FdTarget(const Process& p, int fd) {
    UniqueFd proc = OpenHostProcDir(k_, p);
    if (!proc) return "";
    std::string link = absl::StrCat("fd/", fd);
    SentryFsIdentity as_sentry;
    char buf[4096];
    ssize_t n = readlinkat(proc.get(), link.c_str(), buf, sizeof(buf) - 1);
    if (n < 0) return "";
    std::string host(buf, n);
    struct stat st;
    bool known = fstatat(proc.get(), link.c_str(), &st, 0) == 0;
    if (known) {
      if (const OpenObject* o = k_.fds().Find(st)) {
        if (!o->path.empty()) return o->path;
        if (o->node->IsDir()) {
          auto path = k_.vfs().PathOf(o->node);
          if (path.ok()) return path.value();
        }
      }
    }
    // A pty of the sandbox's devpts, which lies outside the sentry's root.
    if (known && k_.pts_dev && S_ISCHR(st.st_mode) && st.st_dev == k_.pts_dev) {
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
    UniqueFd proc = OpenHostProcDir(k_, *p);
    if (!proc) return nullptr;
    {
      SentryFsIdentity as_sentry;
      if (fstatat(proc.get(), absl::StrCat("fd/", fd).c_str(), &st, 0) < 0 ||
          !S_ISFIFO(st.st_mode)) {
        return nullptr;
      }
    }
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
    for (const Task* t : k_.tasks().TasksOf(&p)) {
      UniqueFd copy(static_cast<int>(syscall(SYS_pidfd_getfd, t->pidfd.get(), fd, 0)));
      struct stat st;
      if (!copy || fstat(copy.get(), &st) < 0) return Errno{ENOENT};  // closed meanwhile
      if (!S_ISFIFO(st.st_mode)) return Errno{ENXIO};
      // Our own copy's /proc/self/fd entry: the same pipe, a new open file
      // description, as fs/pipe.c's fifo_open gives. The guest's permission
      // was checked on the node; non-blocking, so the sentry never waits for
      // the other end.
      int acc = flags & O_ACCMODE;
      std::string self = absl::StrCat("/proc/self/fd/", copy.get());
      int reopened;
      {
        SentryFsIdentity as_sentry;
        reopened = open(self.c_str(), acc | O_NONBLOCK | O_CLOEXEC);
      }
      if (reopened < 0) return Errno{errno};
      UniqueFd out(reopened);
      if (!(flags & O_NONBLOCK)) fcntl(reopened, F_SETFL, fcntl(reopened, F_GETFL) & ~O_NONBLOCK);
      return out;
    }
    return Errno{ENOENT};
  }

  NodeRef TaskDir(std::shared_ptr<Process> p, const std::string& key) {
    std::string k = key + "/task";
    return Dir(
        k,
        [this, p, k](const std::string& n) -> NodeRef {
          pid_t tid;
          if (!absl::SimpleAtoi(n, &tid)) return nullptr;
          for (const Task* t : k_.tasks().TasksOf(p.get())) {
            if (t->ns_tid == tid) return PidDir(p, p->ns_pid);
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
  // The Procfs object lives as long as the lambdas that capture it.
  static Procfs* procfs = nullptr;
  delete procfs;
  procfs = new Procfs(kernel);
  NodeRef root = procfs->Root();
  proc_dir->lookup = root->lookup;
  proc_dir->names = root->names;
}

}  // namespace sentry
