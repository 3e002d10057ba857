// The census filter (loader/census_filter.h): sends to the sentry everything
// the ordinary filter allows or refuses, keeps TRACE and KILL, and lets only
// the loader's one report write go by; and the interpreter the sentry decides
// each call with agrees with the table.
#include "loader/census_filter.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <vector>

#include "loader/filter.h"
#include "syscalls/table.h"

namespace sentry {
namespace {

seccomp_data Data(int nr, std::vector<uint64_t> args = {}, uint32_t arch = AUDIT_ARCH_X86_64) {
  seccomp_data d{};
  d.nr = nr;
  d.arch = arch;
  for (size_t i = 0; i < args.size() && i < 6; ++i) d.args[i] = args[i];
  return d;
}

uint32_t Action(uint32_t ret) { return ret & SECCOMP_RET_ACTION_FULL; }

TEST(CensusFilterTest, TheInterpreterAnswersAsTheTableSays) {
  std::vector<sock_filter> ordinary = BuildSeccompFilter(SyscallTable());
  EXPECT_EQ(EvalSeccompFilter(ordinary, Data(SYS_getpid)), SECCOMP_RET_ALLOW);
  EXPECT_EQ(EvalSeccompFilter(ordinary, Data(SYS_openat)), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(EvalSeccompFilter(ordinary, Data(SYS_execve)), SECCOMP_RET_TRACE);
  EXPECT_EQ(EvalSeccompFilter(ordinary, Data(SYS_ptrace)), RefusalAction(EPERM));
  EXPECT_EQ(EvalSeccompFilter(ordinary, Data(SYS_socket, {AF_PACKET})),
            SECCOMP_RET_ERRNO | EAFNOSUPPORT);
  EXPECT_EQ(EvalSeccompFilter(ordinary, Data(SYS_socket, {AF_UNIX})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(EvalSeccompFilter(ordinary, Data(1000)), SECCOMP_RET_ERRNO | ENOSYS);
  EXPECT_EQ(EvalSeccompFilter(ordinary, Data(SYS_getpid, {}, AUDIT_ARCH_I386)),
            SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(EvalSeccompFilter(ordinary, Data(SYS_getpid | 0x40000000)), SECCOMP_RET_KILL_PROCESS);
  // Every unfiltered row's own action.
  for (const SyscallRow& row : SyscallTable()) {
    if (row.filter != ArgFilter::kNone) continue;
    uint32_t want = row.action == Action::kNative  ? SECCOMP_RET_ALLOW
                    : row.action == Action::kTrap  ? SECCOMP_RET_USER_NOTIF
                    : row.action == Action::kTrace ? SECCOMP_RET_TRACE
                                                   : RefusalAction(row.err);
    EXPECT_EQ(EvalSeccompFilter(ordinary, Data(row.nr)), want) << row.name;
  }
}

TEST(CensusFilterTest, BrokenProgramsKill) {
  std::vector<sock_filter> jump_out = {BPF_JUMP(BPF_JMP | BPF_JA, 5, 0, 0),
                                       BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  EXPECT_EQ(EvalSeccompFilter(jump_out, Data(0)), SECCOMP_RET_KILL_PROCESS);
  std::vector<sock_filter> load_out = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4096),
                                       BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  EXPECT_EQ(EvalSeccompFilter(load_out, Data(0)), SECCOMP_RET_KILL_PROCESS);
  std::vector<sock_filter> no_ret = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0)};
  EXPECT_EQ(EvalSeccompFilter(no_ret, Data(0)), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(EvalSeccompFilter({}, Data(0)), SECCOMP_RET_KILL_PROCESS);
}

// For every number and a spread of arguments: the census program sends to
// the sentry whatever the ordinary one would allow, refuse or send, and
// keeps the rest.
TEST(CensusFilterTest, EverythingAllowedOrRefusedGoesToTheSentry) {
  for (bool namespaces : {true, false}) {
    std::vector<sock_filter> ordinary =
        BuildSeccompFilter(namespaces ? SyscallTable() : SyscallTableWithoutNamespaces());
    std::vector<sock_filter> census = CensusFilter(ordinary, {7, 12});
    ASSERT_FALSE(census.empty());
    const std::vector<std::vector<uint64_t>> arg_sets = {
        {},         {AF_NETLINK, 3}, {AF_UNIX, 1}, {AF_INET, 2, 0, 0, 1}, {2, 0x5401},
        {7, 0, 13}, {1u << 28},      {0xffffffff}, {15, 0x12345}};
    for (int nr = 0; nr < 600; ++nr) {
      for (const auto& args : arg_sets) {
        seccomp_data d = Data(nr, args);
        uint32_t o = Action(EvalSeccompFilter(ordinary, d));
        uint32_t c = Action(EvalSeccompFilter(census, d));
        if (o == SECCOMP_RET_ALLOW || o == SECCOMP_RET_ERRNO || o == SECCOMP_RET_USER_NOTIF) {
          EXPECT_EQ(c, SECCOMP_RET_USER_NOTIF) << nr;
        } else {
          EXPECT_EQ(c, o) << nr;
        }
      }
    }
  }
}

TEST(CensusFilterTest, OnlyTheReportWriteGoesByAndOnlyOnX8664) {
  std::vector<sock_filter> census = CensusFilter(BuildSeccompFilter(SyscallTable()), {7, 12});
  EXPECT_EQ(EvalSeccompFilter(census, Data(SYS_write, {7, 0x1000, 12})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(EvalSeccompFilter(census, Data(SYS_write, {7, 0x1000, 13})), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(EvalSeccompFilter(census, Data(SYS_write, {8, 0x1000, 12})), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(EvalSeccompFilter(census, Data(SYS_write, {7 | (1ull << 32), 0, 12})),
            SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(EvalSeccompFilter(census, Data(SYS_write, {7, 0, 12 | (1ull << 32)})),
            SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(EvalSeccompFilter(census, Data(SYS_writev, {7, 0, 12})), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(EvalSeccompFilter(census, Data(SYS_write, {7, 0, 12}, AUDIT_ARCH_I386)),
            SECCOMP_RET_KILL_PROCESS);
}

TEST(CensusFilterTest, AReturnThatIsNotAConstantHasNoCensusFilter) {
  std::vector<sock_filter> ret_a = {BPF_STMT(BPF_RET | BPF_A, 0)};
  EXPECT_TRUE(CensusFilter(ret_a).empty());
}

}  // namespace
}  // namespace sentry
