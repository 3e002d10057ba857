// The syscall table: complete, consistent with libseccomp's view of x86-64, and
// never running the dangerous syscalls natively.
#include <gtest/gtest.h>
#include <seccomp.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "syscalls/fork_gate.h"
#include "syscalls/table.h"

namespace sentry {
namespace {

std::string SeccompName(int nr) {
  char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);
  std::string out = name ? name : "";
  free(name);
  return out;
}

const SyscallRow* RowNamed(const std::string& name) {
  for (const SyscallRow& row : SyscallTable())
    if (name == row.name) return &row;
  return nullptr;
}

// The argument kinds table.h documents: the letters in its "One letter an
// argument" comment ("d int, u unsigned, ...").
std::string DocumentedArgKinds() {
  std::ifstream in(std::string(SENTRY_SOURCE_DIR) + "/syscalls/table.h");
  std::string line, comment;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.find("One letter an argument") != std::string::npos) inside = true;
    if (!inside) continue;
    if (line.find("//") == std::string::npos) break;
    comment += line.substr(line.find("//") + 2);
  }
  std::string letters;
  std::regex kind_re(R"((?:: |, )([A-Za-z]) )");
  for (auto it = std::sregex_iterator(comment.begin(), comment.end(), kind_re);
       it != std::sregex_iterator(); ++it) {
    letters += (*it)[1].str();
  }
  return letters;
}

const char* ActionName(Action a) {
  switch (a) {
    case Action::kNative:
      return "native";
    case Action::kTrap:
      return "trap";
    case Action::kTrace:
      return "trace";
    case Action::kErrno:
      return "errno";
  }
  return "?";
}

TEST(SyscallTableTest, NumbersAreUniqueAndSorted) {
  auto table = SyscallTable();
  ASSERT_FALSE(table.empty());
  for (size_t i = 1; i < table.size(); ++i) {
    EXPECT_LT(table[i - 1].nr, table[i].nr) << table[i - 1].name << " then " << table[i].name;
  }
}

TEST(SyscallTableTest, NamesAreUnique) {
  std::set<std::string> names;
  for (const SyscallRow& row : SyscallTable()) {
    ASSERT_NE(row.name, nullptr);
    EXPECT_TRUE(names.insert(row.name).second) << "duplicate " << row.name;
  }
}

TEST(SyscallTableTest, NamesAndNumbersMatchLibseccomp) {
  for (const SyscallRow& row : SyscallTable()) {
    EXPECT_EQ(SeccompName(row.nr), row.name) << "nr " << row.nr;
    EXPECT_EQ(seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, row.name), row.nr) << row.name;
  }
}

TEST(SyscallTableTest, EveryNumberLibseccompKnowsHasARow) {
  int known = 0;
  for (int nr = 0; nr < 1024; ++nr) {
    std::string name = SeccompName(nr);
    if (name.empty()) continue;
    ++known;
    EXPECT_NE(FindSyscall(nr), nullptr) << nr << " " << name << " has no row";
  }
  EXPECT_GT(known, 350);
  EXPECT_EQ(static_cast<int>(SyscallTable().size()), known);
}

TEST(SyscallTableTest, FindSyscallAgreesWithTheTable) {
  for (const SyscallRow& row : SyscallTable()) EXPECT_EQ(FindSyscall(row.nr), &row);
  EXPECT_EQ(FindSyscall(-1), nullptr);
  EXPECT_EQ(FindSyscall(335), nullptr);  // the gap before 424
  EXPECT_EQ(FindSyscall(1000), nullptr);
  EXPECT_EQ(FindSyscall(1 << 30), nullptr);
}

TEST(SyscallTableTest, HandlersOnlyOnTrapRows) {
  for (const SyscallRow& row : SyscallTable()) {
    if (row.action == Action::kTrap) {
      EXPECT_NE(row.handler, nullptr) << row.name << " traps without a handler";
    } else {
      EXPECT_EQ(row.handler, nullptr)
          << row.name << " is " << ActionName(row.action) << " yet has a handler";
    }
  }
}

// Filters of trap rows that let some calls run natively.
bool PicksNativeOrTrap(ArgFilter f) {
  return f == ArgFilter::kNativeWithoutAddr || f == ArgFilter::kNativeButPeerCred ||
         f == ArgFilter::kFcntlTrapLocks || f == ArgFilter::kFcntlNotOwnerTrapLocks;
}

TEST(SyscallTableTest, ErrnosAndFiltersAreWellFormed) {
  const std::string kinds = kArgKinds;
  for (const SyscallRow& row : SyscallTable()) {
    if (row.action == Action::kErrno ||
        (row.filter != ArgFilter::kNone && row.action == Action::kNative)) {
      EXPECT_GT(row.err, 0) << row.name;
      EXPECT_LT(row.err, 4096) << row.name;
    }
    if (row.filter != ArgFilter::kNone) {
      EXPECT_TRUE(row.action == Action::kNative ||
                  (row.action == Action::kTrap && PicksNativeOrTrap(row.filter)))
          << row.name << ": filters guard native rows (or pick between native and trap)";
    }
    ASSERT_NE(row.args, nullptr) << row.name;
    EXPECT_LE(std::strlen(row.args), 6u) << row.name;
    for (const char* c = row.args; *c; ++c) {
      EXPECT_NE(std::strchr(kArgKinds, *c), nullptr) << row.name << " has arg kind " << *c;
    }
  }
}

TEST(SyscallTableTest, EveryArgumentKindIsDocumented) {
  std::string documented = DocumentedArgKinds();
  ASSERT_GE(documented.size(), 8u) << "cannot read the argument kinds from syscalls/table.h";
  for (const char* c = kArgKinds; *c; ++c) {
    EXPECT_NE(documented.find(*c), std::string::npos)
        << "kind " << *c << " is not described in SyscallRow::args's comment";
  }
}

TEST(SyscallTableTest, OnlyExecIsTraced) {
  std::set<std::string> traced;
  for (const SyscallRow& row : SyscallTable())
    if (row.action == Action::kTrace) traced.insert(row.name);
  EXPECT_EQ(traced, (std::set<std::string>{"execve", "execveat"}));
}

// The fork gate's two rows (syscalls/fork_gate.h): native but for the calls
// the supervisor answers at a TRACE stop, in every table, and refused with
// EPERM (listed) when the filter refuses the rest of what they gate.
TEST(SyscallTableTest, TheForkGateRowsInEveryTable) {
  for (auto table : {SyscallTable(), SyscallTableWithoutNamespaces(), SyscallTableWithSignalScope(),
                     SyscallTableAfterFork()}) {
    int seen = 0;
    for (const SyscallRow& row : table) {
      if (row.nr == SYS_clone) {
        EXPECT_EQ(row.action, Action::kNative);
        EXPECT_EQ(row.filter, ArgFilter::kCloneForkGate);
        EXPECT_EQ(row.err, EPERM);
        ++seen;
      } else if (row.nr == SYS_seccomp) {
        EXPECT_EQ(row.action, Action::kNative);
        EXPECT_EQ(row.filter, ArgFilter::kSeccompListenerGate);
        EXPECT_EQ(row.err, EPERM);
        ++seen;
      } else if (row.nr == SYS_clone3) {
        // Its flags are in memory: never gated, never native.
        EXPECT_EQ(row.action, Action::kErrno);
        EXPECT_EQ(row.err, ENOSYS);
        ++seen;
      }
    }
    EXPECT_EQ(seen, 3);
  }
  EXPECT_EQ(kForkCloneFlags,
            static_cast<uint32_t>(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                                  CLONE_NEWUTS | CLONE_NEWNS | SIGCHLD));
  EXPECT_TRUE(IsForkClone(SYS_clone, kForkCloneFlags));
  EXPECT_TRUE(IsForkClone(SYS_clone, (uint64_t{1} << 32) | kForkCloneFlags));  // high bits unread
  EXPECT_FALSE(IsForkClone(SYS_clone, kForkCloneFlags | CLONE_FILES));
  EXPECT_FALSE(IsForkClone(SYS_clone, kForkCloneFlags & ~CLONE_NEWNET));
  EXPECT_FALSE(IsForkClone(SYS_clone3, kForkCloneFlags));
  EXPECT_FALSE(IsForkClone(SYS_unshare, kForkCloneFlags));
  EXPECT_TRUE(IsListenerRequest(SYS_seccomp, SECCOMP_FILTER_FLAG_NEW_LISTENER));
  EXPECT_TRUE(
      IsListenerRequest(SYS_seccomp, SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC));
  EXPECT_FALSE(IsListenerRequest(SYS_seccomp, SECCOMP_FILTER_FLAG_TSYNC));
  EXPECT_FALSE(IsListenerRequest(SYS_seccomp, uint64_t{SECCOMP_FILTER_FLAG_NEW_LISTENER} << 32));
  EXPECT_FALSE(IsListenerRequest(SYS_prctl, SECCOMP_FILTER_FLAG_NEW_LISTENER));
}

TEST(SyscallTableTest, PathSyscallsAreTrapped) {
  for (const char* name :
       {"open",      "openat",    "openat2",    "stat",      "lstat",      "newfstatat", "statx",
        "access",    "faccessat", "faccessat2", "mkdir",     "mkdirat",    "rmdir",      "unlink",
        "unlinkat",  "rename",    "renameat",   "renameat2", "link",       "linkat",     "symlink",
        "symlinkat", "readlink",  "readlinkat", "chdir",     "chmod",      "fchmodat",   "chown",
        "fchownat",  "truncate",  "connect",    "bind",      "getdents64", "statfs",     "creat",
        "sendmsg",   "sendmmsg",  "mknod",      "mknodat"}) {
    const SyscallRow* row = RowNamed(name);
    ASSERT_NE(row, nullptr) << name;
    EXPECT_EQ(row->action, Action::kTrap) << name << " is " << ActionName(row->action);
  }
}

TEST(SyscallTableTest, DangerousSyscallsAreNeverNative) {
  for (const char* name : {"io_uring_setup",
                           "io_uring_enter",
                           "io_uring_register",
                           "ptrace",
                           "process_vm_readv",
                           "process_vm_writev",
                           "bpf",
                           "perf_event_open",
                           "userfaultfd",
                           "mount",
                           "umount2",
                           "fsopen",
                           "fsmount",
                           "move_mount",
                           "open_tree",
                           "fspick",
                           "fsconfig",
                           "mount_setattr",
                           "pivot_root",
                           "chroot",
                           "unshare",
                           "setns",
                           "keyctl",
                           "add_key",
                           "request_key",
                           "open_by_handle_at",
                           "name_to_handle_at",
                           "kexec_load",
                           "kexec_file_load",
                           "init_module",
                           "finit_module",
                           "delete_module",
                           "reboot",
                           "swapon",
                           "swapoff",
                           "acct",
                           "quotactl",
                           "quotactl_fd",
                           "pidfd_getfd",
                           "kcmp",
                           "clone3"}) {
    const SyscallRow* row = RowNamed(name);
    ASSERT_NE(row, nullptr) << name << " has no row";
    EXPECT_NE(row->action, Action::kNative) << name << " runs natively";
    EXPECT_EQ(row->action, Action::kErrno) << name << " is " << ActionName(row->action);
  }
}

// The table of a sandbox without namespaces differs from the namespaced one
// only where a namespace of the sandbox's own made a row safe to run natively,
// and never runs more natively than it.
TEST(SyscallTableTest, WithoutNamespacesChangesOnlyNamespaceRows) {
  std::span<const SyscallRow> ns = SyscallTable(), alone = SyscallTableWithoutNamespaces();
  ASSERT_EQ(ns.size(), alone.size());
  std::set<std::string> changed;
  for (size_t i = 0; i < ns.size(); ++i) {
    const SyscallRow &a = ns[i], &b = alone[i];
    ASSERT_EQ(a.nr, b.nr);
    EXPECT_STREQ(a.name, b.name);
    EXPECT_STREQ(a.args, b.args) << a.name;
    EXPECT_EQ(FindSyscallWithoutNamespaces(b.nr), &b);
    if (b.action == Action::kTrap) {
      EXPECT_NE(b.handler, nullptr) << b.name;
    }
    if (a.action == b.action && a.filter == b.filter && a.handler == b.handler) continue;
    changed.insert(b.name);
    EXPECT_TRUE(a.action == Action::kNative || PicksNativeOrTrap(a.filter))
        << a.name << ": only native rows change";
    EXPECT_TRUE(b.action != Action::kNative || b.filter != ArgFilter::kNone) << b.name;
  }
  EXPECT_EQ(changed, (std::set<std::string>{"shmget",
                                            "shmat",
                                            "shmctl",
                                            "shmdt",
                                            "semget",
                                            "semop",
                                            "semctl",
                                            "semtimedop",
                                            "msgget",
                                            "msgsnd",
                                            "msgrcv",
                                            "msgctl",
                                            "mq_open",
                                            "mq_unlink",
                                            "mq_timedsend",
                                            "mq_timedreceive",
                                            "mq_notify",
                                            "mq_getsetattr",
                                            "socket",
                                            "socketpair",
                                            "uname",
                                            "getuid",
                                            "geteuid",
                                            "getgid",
                                            "getegid",
                                            "getresuid",
                                            "getresgid",
                                            "getgroups",
                                            "setuid",
                                            "setgid",
                                            "setreuid",
                                            "setregid",
                                            "setresuid",
                                            "setresgid",
                                            "setfsuid",
                                            "setfsgid",
                                            "setgroups",
                                            "kill",
                                            "getpgid",
                                            "getsid",
                                            "capget",
                                            "rt_sigqueueinfo",
                                            "getpriority",
                                            "setpriority",
                                            "sched_setparam",
                                            "sched_getparam",
                                            "sched_setscheduler",
                                            "sched_getscheduler",
                                            "sched_rr_get_interval",
                                            "tkill",
                                            "tgkill",
                                            "ioprio_set",
                                            "ioprio_get",
                                            "get_robust_list",
                                            "rt_tgsigqueueinfo",
                                            "prlimit64",
                                            "sched_setattr",
                                            "sched_getattr",
                                            "pidfd_open",
                                            "fcntl",
                                            "ioctl"}));
}

// The rule of the table (DESIGN.md): a native row may take an argument that
// names a resource only where a wall confines that kind of resource, and a
// file-system name (a path, a unix socket address, a msghdr that may carry
// one) is confined by nothing but the sentry, so it is never native. Without
// namespaces no namespace can be cited. A Landlock scope is a wall for its
// own kind of resource only (signals), and only in a table for runs that have
// it (signal_scope). Returns one line per broken row.
std::vector<std::string> RuleBreaks(std::span<const SyscallRow> table, bool namespaces,
                                    bool signal_scope = false) {
  std::vector<std::string> breaks;
  auto broke = [&](const SyscallRow& row, const std::string& why) {
    breaks.push_back(std::string(row.name) + ": " + why);
  };
  for (const SyscallRow& row : table) {
    bool native = row.action == Action::kNative ||
                  (row.action == Action::kTrap && PicksNativeOrTrap(row.filter));
    if (!native) continue;
    if (row.why == nullptr || std::strlen(row.why) < 8) broke(row, "no word on why it is safe");
    for (int i = 0; row.args[i]; ++i) {
      char k = row.args[i];
      // kNativeWithoutAddr lets the call through only when argument 4 (the
      // address) is NULL (loader/filter.cc).
      bool guarded = row.filter == ArgFilter::kNativeWithoutAddr && k == 'A' && i == 4;
      if (std::strchr(kFileSystemNameKinds, k) && !guarded) {
        broke(row, "a file-system name (argument " + std::to_string(i) + ") runs natively");
      }
      if ((k == 'P' || k == 'C') && row.wall != Wall::kPidNs && row.wall != Wall::kSelf) {
        broke(row, "names a process without the pid namespace or the caller's own children");
      }
      if ((k == 'K' || k == 'q') && row.wall != Wall::kIpcNs) {
        broke(row, "names an IPC object without the ipc namespace");
      }
      if (k == 'U' && row.wall != Wall::kUserNs && row.wall != Wall::kSelf) {
        broke(row, "names an id without the user namespace");
      }
    }
    if (row.wall == Wall::kLandlockSignal) {
      if (!signal_scope) broke(row, "cites the Landlock signal scope, which the run lacks");
      if (!SendsSignalsOnly(row.nr)) {
        broke(row, "cites the Landlock signal scope for more than the signals it sends");
      }
    } else if (!namespaces && row.wall != Wall::kNone && row.wall != Wall::kSelf) {
      broke(row, "cites a namespace the sandbox does not have");
    }
  }
  return breaks;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

TEST(SyscallTableTest, EveryNativeRowKeepsTheRule) {
  EXPECT_EQ(Join(RuleBreaks(SyscallTable(), true)), "");
}

TEST(SyscallTableTest, WithoutNamespacesEveryNativeRowKeepsTheRule) {
  EXPECT_EQ(Join(RuleBreaks(SyscallTableWithoutNamespaces(), false)), "");
}

// After a session fork (FORK.md step 2) the sandbox's pid namespace holds
// the forked children's nested ones too: no row may then cite it. Every row
// that did becomes the trap the table without namespaces has (the sentry's
// pid rule, sys_pid.cc); nothing else changes.
TEST(SyscallTableTest, AfterAForkNoRowCitesThePidNamespace) {
  std::span<const SyscallRow> ns = SyscallTable(), forked = SyscallTableAfterFork();
  ASSERT_EQ(ns.size(), forked.size());
  std::set<std::string> cited, changed;
  for (size_t i = 0; i < ns.size(); ++i) {
    const SyscallRow &a = ns[i], &b = forked[i];
    ASSERT_EQ(a.nr, b.nr);
    EXPECT_EQ(FindSyscallAfterFork(b.nr), &b);
    bool a_native = a.action == Action::kNative || PicksNativeOrTrap(a.filter);
    if (a_native && a.wall == Wall::kPidNs) cited.insert(a.name);
    if (b.action == Action::kNative || PicksNativeOrTrap(b.filter)) {
      EXPECT_NE(b.wall, Wall::kPidNs) << b.name;
    }
    if (a.action == b.action && a.filter == b.filter && a.handler == b.handler) continue;
    changed.insert(b.name);
    // As without namespaces: the trap, or (fcntl) the filter.
    const SyscallRow* alone = FindSyscallWithoutNamespaces(b.nr);
    EXPECT_EQ(b.action, alone->action) << b.name;
    EXPECT_EQ(b.filter, alone->filter) << b.name;
    EXPECT_EQ(b.handler, alone->handler) << b.name;
    EXPECT_TRUE(b.action == Action::kTrap || b.filter != ArgFilter::kNone) << b.name;
  }
  EXPECT_EQ(changed, cited);
  EXPECT_EQ(cited.count("kill"), 1u);
  EXPECT_EQ(cited.count("pidfd_open"), 1u);
  EXPECT_EQ(Join(RuleBreaks(forked, true)), "");
}

TEST(SyscallTableTest, WithTheSignalScopeEveryNativeRowKeepsTheRule) {
  EXPECT_EQ(Join(RuleBreaks(SyscallTableWithSignalScope(), false, true)), "");
}

// The Landlock signal scope is cited only in the table of runs whose guest
// has it (a run picks that table only then: Run::signal_scope), which
// differs from the table without namespaces in those rows alone.
TEST(SyscallTableTest, TheSignalScopeIsCitedOnlyWhereTheRunHasIt) {
  for (auto table : {SyscallTable(), SyscallTableWithoutNamespaces()}) {
    for (const SyscallRow& row : table) EXPECT_NE(row.wall, Wall::kLandlockSignal) << row.name;
  }
  std::span<const SyscallRow> alone = SyscallTableWithoutNamespaces(),
                              scoped = SyscallTableWithSignalScope();
  ASSERT_EQ(alone.size(), scoped.size());
  std::vector<std::string> changed;
  for (size_t i = 0; i < scoped.size(); ++i) {
    EXPECT_EQ(FindSyscallWithSignalScope(scoped[i].nr), &scoped[i]);
    if (scoped[i].wall == Wall::kLandlockSignal) {
      changed.push_back(scoped[i].name);
      continue;
    }
    EXPECT_EQ(scoped[i].action, alone[i].action) << scoped[i].name;
    EXPECT_EQ(scoped[i].filter, alone[i].filter) << scoped[i].name;
  }
  EXPECT_EQ(changed, std::vector<std::string>({"fcntl"}));
}

// The check itself catches each kind of break: rows as they stood before the
// red team's report (sendmsg native), and rows that cite no wall.
TEST(SyscallTableTest, TheRuleCheckCatchesBrokenRows) {
  const SyscallRow broken[] = {
      {46, "sendmsg", Action::kNative, 0, nullptr, ArgFilter::kNone, "fMx", Wall::kNone,
       "wall 2, as sendto"},
      {307, "sendmmsg", Action::kNative, 0, nullptr, ArgFilter::kNone, "fVux", Wall::kNetNs,
       "wall 2, as sendto"},
      {2, "open", Action::kNative, 0, nullptr, ArgFilter::kNone, "sFo", Wall::kNone,
       "a path, natively"},
      {62, "kill", Action::kNative, 0, nullptr, ArgFilter::kNone, "Pd", Wall::kNone,
       "no wall cited"},
      {29, "shmget", Action::kNative, 0, nullptr, ArgFilter::kNone, "Klx", Wall::kPidNs,
       "the wrong wall"},
      {105, "setuid", Action::kNative, 0, nullptr, ArgFilter::kNone, "U", Wall::kUserNs, ""},
  };
  EXPECT_EQ(RuleBreaks(broken, true).size(), 6u) << Join(RuleBreaks(broken, true));
  const SyscallRow kill_ns[] = {{62, "kill", Action::kNative, 0, nullptr, ArgFilter::kNone, "Pd",
                                 Wall::kPidNs, "the sandbox's pid namespace"}};
  EXPECT_TRUE(RuleBreaks(kill_ns, true).empty());
  EXPECT_EQ(RuleBreaks(kill_ns, false).size(), 1u) << "no pid namespace to cite";
  // The signal scope: only for calls that send signals, only with the scope.
  const SyscallRow scoped[] = {
      {72, "fcntl", Action::kNative, 0, nullptr, ArgFilter::kNone, "fdx", Wall::kLandlockSignal,
       "F_SETOWN's signals stay in the domain"},
      {140, "getpriority", Action::kNative, 0, nullptr, ArgFilter::kNone, "dx",
       Wall::kLandlockSignal, "not a signal at all"},
  };
  EXPECT_EQ(RuleBreaks(scoped, false, true).size(), 1u) << Join(RuleBreaks(scoped, false, true));
  EXPECT_EQ(RuleBreaks(scoped, false, false).size(), 3u) << Join(RuleBreaks(scoped, false));
}

TEST(SyscallTableTest, RiskyNativeRowsAreFiltered) {
  EXPECT_EQ(RowNamed("ioctl")->filter, ArgFilter::kIoctlSafeNetIf);
  EXPECT_EQ(RowNamed("socket")->filter, ArgFilter::kSocketFamily);
  EXPECT_EQ(RowNamed("prctl")->filter, ArgFilter::kPrctlSafe);
  EXPECT_EQ(RowNamed("clone")->filter, ArgFilter::kCloneForkGate);
  EXPECT_EQ(RowNamed("seccomp")->filter, ArgFilter::kSeccompListenerGate);
  EXPECT_EQ(RowNamed("personality")->filter, ArgFilter::kPersonality);
}

}  // namespace
}  // namespace sentry

namespace sentry {
namespace {

// Every trap and trace row says how completely it is answered, and a
// partial one what is missing (docs/syscalls.md shows it).
TEST(SyscallTableTest, EveryTrappedRowHasAStatus) {
  for (auto table : {SyscallTable(), SyscallTableWithoutNamespaces(), SyscallTableWithSignalScope(),
                     SyscallTableAfterFork()}) {
    for (const SyscallRow& row : table) {
      const RowStatus* s = FindRowStatus(row);
      if (row.action != Action::kTrap && row.action != Action::kTrace) {
        EXPECT_EQ(s, nullptr) << row.name;
        continue;
      }
      ASSERT_NE(s, nullptr) << row.name << " has no status in syscalls/table_status.cc";
      if (!s->full) {
        EXPECT_GT(std::strlen(s->note), 0u) << row.name << ": partial, but what is missing?";
      }
    }
  }
}

TEST(SyscallTableTest, EveryArgumentFilterIsSaidInWords) {
  for (const SyscallRow& row : SyscallTable()) {
    if (row.filter == ArgFilter::kNone) continue;
    EXPECT_GT(std::strlen(ArgFilterText(row.filter)), 0u) << row.name;
    EXPECT_FALSE(ArgFilterFailure(row).empty()) << row.name;
  }
}

}  // namespace
}  // namespace sentry
