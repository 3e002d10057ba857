// A guest process's own /proc files as the host has them, rewritten for the
// sandbox: pids, ids, start time and state, scheduler figures without the
// host's clock, and fdinfo without host objects (procfs_internal.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sentry/kernel/procfs_internal.h"
#include "vfs/store.h"

namespace sentry::procfs {
namespace {

const char* StateName(char s) {
  switch (s) {
    case 'R':
      return "R (running)";
    case 'S':
      return "S (sleeping)";
    case 'D':
      return "D (disk sleep)";
    case 'T':
      return "T (stopped)";
    case 'Z':
      return "Z (zombie)";
    case 'X':
      return "X (dead)";
    case 'I':
      return "I (idle)";
    default:
      return nullptr;
  }
}

// The state the sandbox shows for p, given the host's. The guest is never a
// tracer (ptrace is EPERM), so every tracing stop is the sentry's: a process
// the sentry holds in a group-stop (SIGSTOP) is stopped; any other tracing
// stop (a signal on its way, a fork, exec or exit event, a traced call) is
// natively work inside the kernel, so running. A wait for the sentry's answer
// to a trapped call is the host's S already. A process reading its own state
// is running, as natively: only under the sentry does it wait in the trap
// meanwhile. (Showing the other stops as S made a SIGCONT'd sleeper read S, R,
// S: the signal's stop looked like the sleep it had not yet gone back to.)
char ShownState(Kernel& k, const Task* leader, char host) {
  bool reader = leader && k.current == leader;
  if (host == 't') return leader && leader->group_stopped ? 'T' : 'R';
  if (reader && (host == 'S' || host == 'D')) return 'R';
  return host;
}

// Fields of fdinfo that describe the open file itself, or (eventfd, timerfd,
// signalfd, epoll's target fds) the object by the guest's own numbers.
bool KeptFdinfoField(absl::string_view key) {
  static const std::set<absl::string_view> kept = {
      "pos",   "flags",         "eventfd-count", "eventfd-id",  "eventfd-semaphore", "clockid",
      "ticks", "settime flags", "it_value",      "it_interval", "sigmask",           "tfd"};
  return kept.count(key) > 0;
}

// The task a /proc/PID/task/TID file describes (its leader's for
// /proc/PID), and where its host file lies below the process's directory.
const Task* TaskShown(Kernel& k, const Process& p, pid_t tid) {
  if (tid == 0) return LeaderOf(k, p);
  const Task* t = k.tasks().Find(tid);
  return t && t->process.get() == &p ? t : nullptr;
}

std::string HostTaskFile(Kernel& k, const Process& p, pid_t tid, const char* file) {
  if (tid == 0) return HostProcFile(k, p, file);
  return HostProcFile(k, p, absl::StrCat("task/", tid, "/", file).c_str());
}

}  // namespace

std::string StatOf(Kernel& k, const Process& p, pid_t tid) {
  const Task* shown = TaskShown(k, p, tid);
  if (tid != 0 && !shown) return "";
  std::string s = HostTaskFile(k, p, tid, "stat");
  size_t open = s.find('('), close = s.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 2 > s.size()) return "";
  std::vector<std::string> f = absl::StrSplit(
      absl::StripTrailingAsciiWhitespace(absl::string_view(s).substr(close + 2)), ' ');
  // f[j] is field j + 3 (proc(5)): state, ppid, pgrp, session, tty, tpgid,
  // ... starttime (22).
  if (!f.empty() && f[0].size() == 1) f[0] = std::string(1, ShownState(k, shown, f[0][0]));
  for (int i : {1, 2, 3, 5})
    if (i < static_cast<int>(f.size())) f[i] = MapHostPid(k, f[i]);
  uint64_t start = 0;
  if (f.size() > 19 && absl::SimpleAtoi(f[19], &start)) {
    uint64_t boot = BootTicks();
    f[19] = std::to_string(start > boot ? start - boot : 0);
  }
  return absl::StrCat(tid && shown ? shown->ns_tid : p.ns_pid, " ",
                      s.substr(open, close - open + 1), " ", absl::StrJoin(f, " "), "\n");
}

std::string StatusOf(Kernel& k, const Process& p, pid_t tid) {
  const Task* shown = TaskShown(k, p, tid);
  if (tid != 0 && !shown) return "";
  pid_t ns_tid = tid && shown ? shown->ns_tid : p.ns_pid;
  std::string out;
  const vfs::Creds& c = p.creds;
  for (absl::string_view line : absl::StrSplit(HostTaskFile(k, p, tid, "status"), '\n')) {
    if (line.empty()) continue;
    std::string l(line);
    auto field = [&](const char* name) { return l.rfind(name, 0) == 0; };
    auto value = [&](absl::string_view v) {
      return absl::StrCat(l.substr(0, l.find(':') + 1), "\t", v);
    };
    if (field("Tgid:") || field("NStgid:")) {
      l = value(std::to_string(p.ns_pid));
    } else if (field("Pid:") || field("NSpid:")) {
      l = value(std::to_string(ns_tid));
    } else if (field("PPid:")) {
      l = value(MapHostPid(k, std::string(absl::StripAsciiWhitespace(l.substr(5)))));
    } else if (field("Umask:")) {
      for (const Task* t : k.tasks().TasksOf(&p)) {
        char buf[8];
        snprintf(buf, sizeof(buf), "%04o", t->fs->umask);
        l = value(buf);
        break;
      }
    } else if (field("State:")) {
      absl::string_view v = absl::StripAsciiWhitespace(absl::string_view(l).substr(6));
      const char* name = v.empty() ? nullptr : StateName(ShownState(k, shown, v[0]));
      if (name) l = value(name);
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

// Where the task waits as native would name it: the sentry's own waits
// (seccomp's notification, a ptrace stop) are no kernel function the guest
// called; a group-stop is do_signal_stop's, the reader itself runs ("0").
std::string WchanOf(Kernel& k, const Process& p) {
  const Task* leader = LeaderOf(k, p);
  if (leader && leader->group_stopped) return "do_signal_stop";
  if (leader && k.current == leader) return "0";
  std::string w = HostProcFile(k, p, "wchan");
  if (w.find("seccomp") != std::string::npos || w.find("ptrace") != std::string::npos) return "0";
  return w.size() > 128 ? "0" : w;
}

// The header with the sandbox's pid, then the process's own counters;
// clocks (exec_start, vruntime, last_update_time) would tell the host's
// uptime and are left out.
std::string SchedOf(Kernel& k, const Process& p) {
  std::string host = HostProcFile(k, p, "sched");
  if (host.empty()) return "";
  std::string comm(absl::StripTrailingAsciiWhitespace(HostProcFile(k, p, "comm")));
  std::string out = absl::StrCat(comm, " (", p.ns_pid, ", #threads: ", k.tasks().TasksOf(&p).size(),
                                 ")\n", std::string(67, '-'), "\n");
  static const std::set<absl::string_view> kept = {
      "se.sum_exec_runtime",     "se.nr_migrations", "nr_switches", "nr_voluntary_switches",
      "nr_involuntary_switches", "se.load.weight",   "policy",      "prio"};
  for (absl::string_view line : absl::StrSplit(host, '\n')) {
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    if (kept.count(absl::StripAsciiWhitespace(line.substr(0, colon)))) {
      absl::StrAppend(&out, line, "\n");
    }
  }
  return out;
}

std::string FdinfoOf(Kernel& k, const Process& p, int fd) {
  UniqueFd proc = OpenHostProcDir(k, p);
  if (!proc) return "";
  std::string host;
  struct stat st;
  bool known;
  {
    UniqueFd f = k.proc_opener().OpenAt(proc.get(), absl::StrCat("fdinfo/", fd));
    if (!f) return "";
    host = ReadAllFd(f.get());
    UniqueFd copy = GuestFdOf(k, p, fd);
    known = copy && fstat(copy.get(), &st) == 0;
  }
  // A donated object's inode is the one the guest's fstat shows, and its
  // mount the sandbox's (sysfs.cc's mountinfo: / is 1, /proc 2, /tmp 3).
  const OpenObject* o = known ? k.fds().Find(st) : nullptr;
  std::string out;
  for (absl::string_view line : absl::StrSplit(host, '\n', absl::SkipEmpty())) {
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    absl::string_view key = line.substr(0, colon);
    absl::string_view rest = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (key == "mnt_id") {
      if (!o) {
        absl::StrAppend(&out, line, "\n");
        continue;
      }
      int id = 1;
      if (absl::StartsWith(o->path, "/proc/") || o->path == "/proc") id = 2;
      if (absl::StartsWith(o->path, "/tmp/") || o->path == "/tmp") id = 3;
      absl::StrAppend(&out, "mnt_id:\t", id, "\n");
    } else if (key == "flags" && o && o->node->generate) {
      // A generated file is a sealed memfd, which memfd_create opens
      // read-write: the guest opened it read-only.
      unsigned flags = 0;
      if (sscanf(std::string(rest).c_str(), "%o", &flags) != 1) continue;
      char buf[32];
      snprintf(buf, sizeof(buf), "flags:\t0%o\n", flags & ~static_cast<unsigned>(O_ACCMODE));
      out += buf;
    } else if (key == "ino") {
      absl::StrAppend(&out, "ino:\t", o ? o->node->attr().ino : st.st_ino, "\n");
    } else if (key == "Pid") {
      absl::StrAppend(&out, "Pid:\t", rest == "-1" ? "-1" : MapHostPid(k, std::string(rest)), "\n");
    } else if (key == "NSpid") {
      // The innermost pid, the host's first: the sandbox's is the last.
      std::vector<absl::string_view> pids = absl::StrSplit(rest, '\t', absl::SkipEmpty());
      absl::StrAppend(&out, "NSpid:\t", pids.empty() ? "-1" : pids.back(), "\n");
    } else if (key == "tfd") {
      // An epoll target: the guest's fd number and events; its inode and
      // device (" ino:", " sdev:") are the host object's.
      absl::StrAppend(&out, line.substr(0, line.find(" ino:")), "\n");
    } else if (KeptFdinfoField(key)) {
      // Not kept: inotify and fanotify watches and lock rows, which name
      // the host's inodes, devices and pids.
      absl::StrAppend(&out, line, "\n");
    }
  }
  return out;
}

// A mapping of a store file names the store (its place in the mount view,
// or its host directory without a mount namespace): it is shown under the
// sandbox path it was opened by while the sentry still knows the object,
// else under the store's name in the mount view, never the host's.
std::string MapsOf(Kernel& k, const Process& p, const char* file) {
  std::string host = HostProcFile(k, p, file);
  const std::string& store = k.vfs().store().exec_dir();
  std::string out;
  out.reserve(host.size());
  for (absl::string_view line : absl::StrSplit(host, '\n', absl::SkipEmpty())) {
    size_t at = line.find(store + "/");
    if (store.empty() || at == absl::string_view::npos) {
      absl::StrAppend(&out, line, "\n");
      continue;
    }
    // "start-end perms offset major:minor inode   path"
    unsigned major = 0, minor = 0;
    unsigned long ino = 0;
    char dev[32] = {};
    std::string head(line.substr(0, at));
    struct stat st = {};
    std::string shown;
    if (sscanf(head.c_str(), "%*s %*s %*s %31s %lu", dev, &ino) == 2 &&
        sscanf(dev, "%x:%x", &major, &minor) == 2) {
      st.st_dev = makedev(major, minor);
      st.st_ino = ino;
      if (const OpenObject* o = k.fds().Find(st)) shown = o->path;
    }
    if (shown.empty()) {
      shown = absl::StrCat(vfs::Store::kGuestPath, line.substr(at + store.size()));
    }
    absl::StrAppend(&out, head, shown, "\n");
  }
  return out;
}

}  // namespace sentry::procfs
