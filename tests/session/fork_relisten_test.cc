// A session fork's run side (sentry/session/FORK.md step 2) through real
// processes: RunSandbox, as the session launcher runs it, in a process this
// test forks, with a control socket the test holds (as the server does) and
// a guest (fork_relisten_guest.c) that forks and re-listens as the session
// kernel will. Where no child's supervisor runs (the test closes its end of
// the hand-off socket) the supervisor kills the fork's child at the end of
// the re-listen and says so; two tests run a real S2 (RunSandbox in adopt
// mode, sentry/run/adopt.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "sentry/base/fd_passing.h"
#include "sentry/base/unique_fd.h"
#include "sentry/run/fork_control.h"
#include "sentry/run/run.h"

namespace sentry {
namespace {

constexpr const char* kGuest = "/home/sandbox/guest";
constexpr const char* kConformance = "/home/sandbox/conformance_test";

// A sandbox's supervisor (RunSandbox in a child of this process), the
// guest's stdin and stdout, and the control socket.
struct Sandbox {
  pid_t supervisor = -1;
  UniqueFd in, out, control;
  std::string pending;
};

// As root (CI): a fork without root (a user namespace of the caller's) is
// not yet tried here.
#define SKIP_UNLESS_ROOT() \
  if (geteuid() != 0) GTEST_SKIP() << "the fork's run side is tested as root"

Sandbox Start(std::vector<std::string> args) {
  Sandbox s;
  int in[2], out[2], ctl[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
      socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) != 0) {
    return s;
  }
  pid_t pid = fork();
  if (pid == 0) {
    // As the session launcher's supervisor child: stdio the pipes, relayed.
    prctl(PR_SET_DUMPABLE, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    RunOptions o;
    o.argv = {kGuest};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.copies = {{FORK_RELISTEN_GUEST, kGuest}, {CONFORMANCE_TEST_BIN, kConformance}};
    o.copy_script = false;
    o.tty = TtyMode::kOff;
    o.timeout_sec = 60;
    // As the launcher's (sandbox_launcher.cc): a parent that mapped the
    // fast-metadata region (its library maps it at a stat or a create) could
    // not be forked.
    o.fast_metadata = false;
    o.control_fd = fcntl(ctl[1], F_DUPFD_CLOEXEC, 10);
    _exit(RunSandbox(o));
  }
  close(in[0]);
  close(out[1]);
  close(ctl[1]);
  s.supervisor = pid;
  s.in = UniqueFd(in[1]);
  s.out = UniqueFd(out[0]);
  s.control = UniqueFd(ctl[0]);
  return s;
}

// The guest's next stdout line ("" at its end or after timeout_ms).
std::string ReadLine(Sandbox& s, int timeout_ms = 30000) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    size_t nl = s.pending.find('\n');
    if (nl != std::string::npos) {
      std::string line = s.pending.substr(0, nl);
      s.pending.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return "";
    pollfd p{s.out.get(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    ssize_t n = read(s.out.get(), buf, sizeof(buf));
    if (n <= 0) return "";
    s.pending.append(buf, static_cast<size_t>(n));
  }
}

// Every "key value" line up to "done" (or the end).
std::map<std::string, std::string> ReadFacts(Sandbox& s) {
  std::map<std::string, std::string> facts;
  for (std::string line = ReadLine(s); !line.empty() && line != "done"; line = ReadLine(s)) {
    size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    facts[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return facts;
}

// The guest's pid (its "pid N" line); the lines before it into *facts.
int GuestPid(Sandbox& s, std::map<std::string, std::string>* facts = nullptr) {
  for (std::string line = ReadLine(s); !line.empty(); line = ReadLine(s)) {
    if (line.rfind("pid ", 0) == 0) return std::atoi(line.c_str() + 4);
    size_t sp = line.rfind(' ');
    if (facts && sp != std::string::npos) (*facts)[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return -1;
}

bool Receive(Sandbox& s, ControlReply* reply, int timeout_ms = 30000) {
  pollfd p{s.control.get(), POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return false;
  return recv(s.control.get(), reply, sizeof(*reply), 0) == sizeof(*reply) &&
         reply->magic == kControlMagic;
}

// Sends raw bytes and fds; the reply.
ControlReply Ask(Sandbox& s, const void* data, size_t len, const std::vector<int>& fds = {}) {
  ControlReply reply;
  reply.status = -1;
  if (SendWithFds(s.control.get(), data, len, fds) < 0) return reply;
  if (!Receive(s, &reply)) reply.status = -1;
  return reply;
}

ControlReply Prepare(Sandbox& s, uint32_t count, int32_t thread, const std::vector<int>& fds,
                     uint64_t id = 7) {
  ControlRequest r;
  r.op = static_cast<uint32_t>(ControlOp::kForkPrepare);
  r.id = id;
  r.count = count;
  r.thread = thread;
  return Ask(s, &r, sizeof(r), fds);
}

// n hand-off sockets: the supervisor's ends (to send), and ours.
struct Handoffs {
  std::vector<UniqueFd> theirs, ours;
  std::vector<int> Theirs() const {
    std::vector<int> v;
    for (const UniqueFd& fd : theirs) v.push_back(fd.get());
    return v;
  }
};
Handoffs MakeHandoffs(int n) {
  Handoffs h;
  for (int i = 0; i < n; ++i) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) break;
    h.theirs.emplace_back(sv[0]);
    h.ours.emplace_back(sv[1]);
  }
  return h;
}

int Finish(Sandbox& s) {
  s.in.Reset();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int status = 0;
  while (waitpid(s.supervisor, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(s.supervisor, SIGKILL);
      waitpid(s.supervisor, &status, 0);
      return -1;
    }
    usleep(10000);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string Errno(int e) { return std::to_string(e); }

// Work a session does, run by the guest before and after its re-listen:
// a conformance subset (the calls that name pids, which the re-listen
// traps, and file calls) and a python cell's worth.
const std::vector<std::string>& Work() {
  static const std::vector<std::string> work = {
      std::string(kConformance) +
          " --gtest_brief=1 --gtest_filter='Tkill*:Tgkill*:Rt*:PidfdOpen*:GetRobustList*:"
          "Getpriority*:Setpriority*:Sched*:Ioprio*:OpenTest.*:StatTest.*:RenameTest.*:FdTest.*'"
          " >/dev/null",
      "/usr/bin/python3 -c \"import json, os, subprocess; p = '/tmp/cell.json'; "
      "json.dump({'a': [1, 2]}, open(p, 'w')); assert json.load(open(p))['a'] == [1, 2]; "
      "assert subprocess.run(['true']).returncode == 0; os.kill(os.getpid(), 0)\"",
  };
  return work;
}

std::string Reason(const ControlReply& r) {
  return std::string(r.reason, strnlen(r.reason, sizeof(r.reason)));
}

TEST(ForkRelisten, ThePreparedParentRunsOnItsNewListenerAndCannotNameItsChild) {
  SKIP_UNLESS_ROOT();
  std::vector<std::string> args = {"fork"};
  args.insert(args.end(), Work().begin(), Work().end());
  Sandbox s = Start(args);
  ASSERT_GT(s.supervisor, 0);
  std::map<std::string, std::string> before;
  int pid = GuestPid(s, &before);
  ASSERT_GT(pid, 0);
  Handoffs h = MakeHandoffs(1);
  ControlReply ok = Prepare(s, 1, pid, h.Theirs(), 41);
  EXPECT_EQ(ok.kind, static_cast<uint32_t>(ControlKind::kReply));
  EXPECT_EQ(ok.id, 41u);
  ASSERT_EQ(ok.status, 0) << Reason(ok);
  h.theirs.clear();
  // No supervisor for the child here: its hand-off fails at once, and the
  // parent's supervisor kills it and says why.
  h.ours.clear();
  ASSERT_EQ(write(s.in.get(), "go\n", 3), 3);
  auto after = ReadFacts(s);
  ControlReply done;
  ASSERT_TRUE(Receive(s, &done)) << "no relistened event";
  EXPECT_EQ(done.kind, static_cast<uint32_t>(ControlKind::kRelistened));
  EXPECT_EQ(done.id, 41u);
  EXPECT_EQ(done.status, 0) << Reason(done);
  EXPECT_EQ(done.children, 0u);
  EXPECT_NE(Reason(done).find("supervisor"), std::string::npos) << Reason(done);
  EXPECT_EQ(Finish(s), 0);

  // The same work, with the same result, before and after.
  for (size_t i = 0; i < Work().size(); ++i) {
    EXPECT_EQ(before["work before " + std::to_string(i)], "rc=0") << Work()[i];
    EXPECT_EQ(after["work after " + std::to_string(i)], "rc=0") << Work()[i];
  }
  EXPECT_EQ(after["clone"], "0");
  EXPECT_EQ(after["relisten"], "0");
  EXPECT_EQ(after["no_new_fd"], "0");
  // Natively each of these reaches the child (a zombie till reaped): 0.
  EXPECT_EQ(after["kill_child"], Errno(ESRCH));
  EXPECT_EQ(after["kill_all"], Errno(ESRCH));
  EXPECT_EQ(after["getpgid_child"], Errno(ESRCH));
  // The parent's own group (the child's too, until its setsid): the sentry
  // signals its sandbox members itself.
  EXPECT_EQ(after["kill_group"], "0");
  EXPECT_EQ(after["kill_own_group"], "0");
  EXPECT_EQ(after["kill_self"], "0");
  EXPECT_EQ(after["reaped"], "0");
  EXPECT_EQ(after["relisten_again"], Errno(EPERM));
  // The guest's wait in its re-listen: quiesce, L1 closed, the program
  // written and the listener taken, the new loop started.
  std::cout << "re-listen as the guest waits for it: " << after["relisten_us"] << " us\n";
}

// With the child handed to its own supervisor (RunSandbox in adopt mode,
// adopt's S2): it lives on after the parent's kill(pid, SIGKILL),
// kill(-1, SIGKILL) and kill(0, SIGCONT), each of which natively reaches it.
TEST(ForkRelisten, TheAdoptedChildIsOutOfTheParentsReach) {
  SKIP_UNLESS_ROOT();
  Sandbox s = Start({"live"});
  ASSERT_GT(s.supervisor, 0);
  int pid = GuestPid(s);
  ASSERT_GT(pid, 0);
  Handoffs h = MakeHandoffs(1);
  int s2in[2], s2out[2];
  ASSERT_EQ(pipe2(s2in, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(s2out, O_CLOEXEC), 0);
  pid_t s2 = fork();
  if (s2 == 0) {
    prctl(PR_SET_DUMPABLE, 0);
    dup2(s2in[0], 0);
    dup2(s2out[1], 1);
    RunOptions o;
    o.timeout_sec = 30;
    o.disk_bytes = 64 << 20;
    o.tty = TtyMode::kOff;
    o.adopt_fd = fcntl(h.ours[0].get(), F_DUPFD_CLOEXEC, 10);
    _exit(RunSandbox(o));
  }
  close(s2in[0]);
  close(s2out[1]);
  h.ours.clear();
  ControlReply ok = Prepare(s, 1, pid, h.Theirs());
  ASSERT_EQ(ok.status, 0) << Reason(ok);
  h.theirs.clear();
  ASSERT_EQ(write(s.in.get(), "go\n", 3), 3);
  std::map<std::string, std::string> after;
  for (std::string line = ReadLine(s); !line.empty() && line != "killed"; line = ReadLine(s)) {
    size_t sp = line.rfind(' ');
    if (sp != std::string::npos) after[line.substr(0, sp)] = line.substr(sp + 1);
  }
  ControlReply done;
  ASSERT_TRUE(Receive(s, &done));
  EXPECT_EQ(done.status, 0) << Reason(done);
  EXPECT_EQ(done.children, 1u) << Reason(done);
  usleep(200 * 1000);
  // The child, and so its supervisor, still live.
  int status = 0;
  EXPECT_EQ(waitpid(s2, &status, WNOHANG), 0) << "the adopted child ended";
  ASSERT_EQ(write(s.in.get(), "go\n", 3), 3);
  EXPECT_EQ(ReadLine(s), "done");
  EXPECT_EQ(Finish(s), 0);
  kill(s2, SIGKILL);
  waitpid(s2, &status, 0);
  close(s2in[1]);
  close(s2out[0]);
  EXPECT_EQ(after["clone"], "0");
  EXPECT_EQ(after["relisten"], "0");
  EXPECT_EQ(after["kill_child"], Errno(ESRCH));
  EXPECT_EQ(after["kill_all"], Errno(ESRCH));
  EXPECT_EQ(after["kill_own_group"], "0");  // the parent's group alone (the child setsid'd)
}

// The whole flow with a real child's supervisor: S1 a session's RunSandbox
// with its control socket, the guest forking in a real sandbox, S2 a
// RunSandbox in adopt mode (sentry/run/adopt.h) on the hand-off socket.
TEST(ForkRelisten, TheChildIsAdoptedByItsOwnSupervisor) {
  if (geteuid() != 0) GTEST_SKIP() << "S2 adopts as root only";
  // S2 first (this process has one thread).
  int sv[2], s2in[2], s2out[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  ASSERT_EQ(pipe2(s2in, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(s2out, O_CLOEXEC), 0);
  pid_t s2 = fork();
  if (s2 == 0) {
    dup2(s2in[0], 0);
    dup2(s2out[1], 1);
    RunOptions o;
    o.adopt_fd = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
    o.timeout_sec = 60;
    _exit(RunSandbox(o));
  }
  close(sv[1]);
  close(s2in[0]);
  close(s2out[1]);
  Sandbox child;  // S2's stdio, read as a sandbox's
  child.in = UniqueFd(s2in[1]);
  child.out = UniqueFd(s2out[0]);

  Sandbox s = Start({"adopt"});
  ASSERT_GT(s.supervisor, 0);
  int pid = GuestPid(s);
  ASSERT_GT(pid, 0);
  ControlReply ok = Prepare(s, 1, pid, {sv[0]}, 43);
  ASSERT_EQ(ok.status, 0) << Reason(ok);
  close(sv[0]);
  ASSERT_EQ(write(s.in.get(), "go\n", 3), 3);
  // The child's first line: its first act, on S2's pipe.
  EXPECT_EQ(ReadLine(child), "MARKER");
  std::map<std::string, std::string> seen;
  for (std::string line = ReadLine(child); !line.empty(); line = ReadLine(child)) {
    size_t sp = line.rfind(' ');
    if (sp != std::string::npos) seen[line.substr(0, sp)] = line.substr(sp + 1);
    if (line == "child_waits 1") break;
  }
  std::map<std::string, std::string> parent;
  for (std::string line = ReadLine(s); !line.empty(); line = ReadLine(s)) {
    size_t sp = line.rfind(' ');
    if (sp != std::string::npos) parent[line.substr(0, sp)] = line.substr(sp + 1);
    if (line == "after_written 1") break;
  }
  ControlReply done;
  ASSERT_TRUE(Receive(s, &done));
  EXPECT_EQ(done.status, 0) << Reason(done);
  EXPECT_EQ(done.children, 1u) << Reason(done);
  ASSERT_EQ(write(child.in.get(), "go\n", 3), 3);
  for (std::string line = ReadLine(child); !line.empty(); line = ReadLine(child)) {
    size_t sp = line.rfind(' ');
    if (sp != std::string::npos) seen[line.substr(0, sp)] = line.substr(sp + 1);
  }
  ASSERT_EQ(write(s.in.get(), "go\n", 3), 3);
  for (std::string line = ReadLine(s); !line.empty() && line != "done"; line = ReadLine(s)) {
    size_t sp = line.rfind(' ');
    if (sp != std::string::npos) parent[line.substr(0, sp)] = line.substr(sp + 1);
  }
  EXPECT_EQ(Finish(s), 0);
  int status = 0;
  ASSERT_EQ(waitpid(s2, &status, 0), s2);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  EXPECT_EQ(parent["clone"], "0");
  EXPECT_EQ(parent["relisten"], "0");
  EXPECT_EQ(parent.count("MARKER"), 0u);  // the parent's pipe never saw the child
  EXPECT_EQ(s.pending.find("MARKER"), std::string::npos);
  EXPECT_EQ(parent["parent_sees_child_file"], "ERR2");
  EXPECT_EQ(seen["child_pid"], "1");
  EXPECT_EQ(seen["child_before"], "from-parent");
  EXPECT_EQ(seen["child_own"], "from-child");
  EXPECT_EQ(seen["child_after"], "ERR2");
  EXPECT_EQ(seen["child_kill_all"], Errno(ESRCH));
  EXPECT_EQ(seen["child_sid"], "1");
  EXPECT_EQ(seen["child_guest_bin"], "yes");
  EXPECT_EQ(seen["END"], "1");
  if (HasFailure()) {
    for (const auto& [k, v] : seen) std::cout << "child: " << k << " " << v << "\n";
  }
}

// Escape attempts during the quiesce: a thread waits in the old listener
// (a FIFO's open, answered late), another re-listens on its own, two loop
// on trapped calls; none may lose a call or get a listener.
TEST(ForkRelisten, RacingThreadsDuringTheQuiesce) {
  SKIP_UNLESS_ROOT();
  Sandbox s = Start({"race"});
  ASSERT_GT(s.supervisor, 0);
  int pid = GuestPid(s);
  ASSERT_GT(pid, 0);
  Handoffs h = MakeHandoffs(1);
  ControlReply ok = Prepare(s, 1, pid, h.Theirs());
  ASSERT_EQ(ok.status, 0) << Reason(ok);
  h.ours.clear();  // no supervisor for the child: it is killed
  ASSERT_EQ(write(s.in.get(), "go\n", 3), 3);
  auto after = ReadFacts(s);
  ControlReply done;
  ASSERT_TRUE(Receive(s, &done));
  EXPECT_EQ(done.status, 0) << Reason(done);
  EXPECT_EQ(Finish(s), 0);
  EXPECT_EQ(after["clone"], "0");
  EXPECT_EQ(after["relisten"], "0");
  EXPECT_EQ(after["own_relisten"], Errno(EPERM));
  EXPECT_EQ(after["fifo_writer"], "0");
  EXPECT_EQ(after["fifo_open"], "0");
  EXPECT_EQ(after["calls_after"], "0");
  EXPECT_EQ(after["signals_seen"], "0");
  EXPECT_EQ(after["call_errors"], "0") << "the first: " << after["first_error"];
  EXPECT_EQ(after["kill_child"], Errno(ESRCH));
  EXPECT_EQ(after["relisten_again"], Errno(EPERM));
}

TEST(ForkRelisten, WithoutAPrepareTheForkAndTheRelistenAreEperm) {
  SKIP_UNLESS_ROOT();
  Sandbox s = Start({"unprepared"});
  ASSERT_GT(s.supervisor, 0);
  auto facts = ReadFacts(s);
  EXPECT_EQ(Finish(s), 0);
  EXPECT_EQ(facts["clone"], Errno(EPERM));
  EXPECT_EQ(facts["relisten"], Errno(EPERM));
  EXPECT_EQ(facts["kill_self"], "0");
}

// Every malformed or refused control message gets an error reply with a
// reason, and the supervisor goes on: a valid prepare after them works.
TEST(ForkRelisten, BadControlMessagesGetAnErrorReply) {
  SKIP_UNLESS_ROOT();
  Sandbox s = Start({"fork"});
  ASSERT_GT(s.supervisor, 0);
  int pid = GuestPid(s);
  ASSERT_GT(pid, 0);
  auto refused = [&](const ControlReply& r, int err, const char* why) {
    EXPECT_EQ(r.kind, static_cast<uint32_t>(ControlKind::kReply)) << why;
    EXPECT_EQ(r.status, err) << why << ": " << Reason(r);
    EXPECT_FALSE(Reason(r).empty()) << why;
  };
  refused(Ask(s, "abc", 3), EINVAL, "a short message");
  std::string big(4096, 'x');
  refused(Ask(s, big.data(), big.size()), EINVAL, "a long message");
  ControlRequest bad;
  bad.magic = 0x12345678;
  refused(Ask(s, &bad, sizeof(bad)), EINVAL, "a bad magic");
  bad = ControlRequest{};
  bad.op = 99;
  refused(Ask(s, &bad, sizeof(bad)), EINVAL, "an unknown op");
  Handoffs h = MakeHandoffs(2);
  refused(Prepare(s, 0, pid, {}), EINVAL, "count 0");
  refused(Prepare(s, 101, pid, {}), EINVAL, "count 101");
  refused(Prepare(s, 2, pid, {h.theirs[0].get()}), EINVAL, "fewer sockets than children");
  refused(Prepare(s, 1, pid, h.Theirs()), EINVAL, "more sockets than children");
  refused(Prepare(s, 1, 0, {h.theirs[0].get()}), EINVAL, "thread 0");
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  refused(Prepare(s, 1, pid, {pipe_fds[0]}), EINVAL, "a pipe for a hand-off socket");
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  refused(Prepare(s, 1, 99999, {h.theirs[0].get()}), ESRCH, "no such thread");
  ControlRequest cancel;
  cancel.op = static_cast<uint32_t>(ControlOp::kForkCancel);
  refused(Ask(s, &cancel, sizeof(cancel)), ENOENT, "a cancel with nothing prepared");

  // A prepare; a second one is refused; a cancel withdraws it; then again.
  EXPECT_EQ(Prepare(s, 1, pid, {h.theirs[0].get()}).status, 0);
  refused(Prepare(s, 1, pid, {h.theirs[1].get()}), EBUSY, "a second prepare");
  EXPECT_EQ(Ask(s, &cancel, sizeof(cancel)).status, 0);
  EXPECT_EQ(Prepare(s, 1, pid, {h.theirs[1].get()}).status, 0);
  h.ours.clear();
  ASSERT_EQ(write(s.in.get(), "go\n", 3), 3);
  auto after = ReadFacts(s);
  ControlReply done;
  ASSERT_TRUE(Receive(s, &done));
  EXPECT_EQ(done.status, 0) << Reason(done);
  EXPECT_EQ(Finish(s), 0);
  EXPECT_EQ(after["relisten"], "0");
  EXPECT_EQ(after["kill_all"], Errno(ESRCH));
}

// A fork copies one process, and a chain holds at most 16 filters.
TEST(ForkRelisten, AForkIsRefusedWithASecondProcessOrSixteenFilters) {
  SKIP_UNLESS_ROOT();
  for (const char* mode : {"busy", "deep"}) {
    Sandbox s = Start({mode});
    ASSERT_GT(s.supervisor, 0);
    int pid = GuestPid(s);
    ASSERT_GT(pid, 0) << mode;
    Handoffs h = MakeHandoffs(1);
    ControlReply r = Prepare(s, 1, pid, h.Theirs());
    EXPECT_EQ(r.status, std::string(mode) == "busy" ? EBUSY : ELOOP) << mode << ": " << Reason(r);
    EXPECT_NE(Reason(r).find(std::string(mode) == "busy" ? "processes" : "16"), std::string::npos)
        << Reason(r);
    ASSERT_EQ(write(s.in.get(), "go\n", 3), 3);
    EXPECT_EQ(ReadLine(s), "done") << mode;
    EXPECT_EQ(Finish(s), 0) << mode;
  }
}

}  // namespace
}  // namespace sentry
