// Helpers of fork_probe (tests/session/fork_probe.cc): the miniature
// sandbox's filter, caps, ids and the listener hand-over, each a few
// syscalls.
#ifndef SENTRY_TESTS_SESSION_FORK_PROBE_UTIL_H_
#define SENTRY_TESTS_SESSION_FORK_PROBE_UTIL_H_

#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace fork_probe {

inline constexpr unsigned long kSandboxFlags =
    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS;
inline constexpr unsigned long kForkFlags = kSandboxFlags | SIGCHLD;
inline constexpr const char* kNs[] = {"user", "pid", "net", "ipc", "uts", "mnt"};
inline constexpr int kAnswerGetppid = 4242;  // S2's answer to the child
inline constexpr int kAnswerParent = 1111;   // S1's answer to the guest

// The write end of the report pipe: every process reports its lines here.
extern int g_results;

// One line to the report pipe (and to stderr with FORK_PROBE_VERBOSE set).
void Report(const std::string& line);

// "ok NAME", or "FAIL NAME: detail (errno ...)".
void Check(bool ok, const std::string& name, const std::string& detail = "");

// clone(2) with no new stack: returns twice, as fork does.
long RawClone(unsigned long flags);

bool WriteFile(const std::string& path, const std::string& text);

// The target of /proc/PID/ns/NS ("net:[4026531840]").
std::string NsId(pid_t pid, const char* ns);

// The process group of a host pid (/proc/PID/stat's fifth field).
int Pgrp(pid_t pid);

// A filter: every syscall in `notify` goes to a new listener, the rest runs.
// With fork_gate (the sandbox's own filter): clone with exactly the fork's
// flags stops for the ptracer (SECCOMP_RET_TRACE), who allows it only when a
// fork was granted; clone with any other namespace flag fails EPERM, as the
// table's clone row does today.
int InstallFilter(const std::vector<int>& notify, bool fork_gate = false,
                  unsigned flags = SECCOMP_FILTER_FLAG_NEW_LISTENER);

// Every capability and the bounding set dropped, then no_new_privs.
void DropCaps();

bool LoopbackUp();  // in the caller's net namespace

void ReadLine(int fd, char* buf, size_t n);  // up to '\n', NUL-terminated

// At the seccomp stop of a granted seccomp(NEW_LISTENER): runs the call to
// its exit, takes the listener with pidfd_getfd, then has the stopped task
// close its own copy (its registers rewritten to close(fd), then restored),
// so the guest never runs holding a listener. Returns the supervisor's fd.
// A signal that arrived meanwhile is held back in *deferred_signal: resume
// the task with it (the task is left at a syscall-exit stop).
int TakeListenerAt(pid_t tid, int pidfd, int* deferred_signal);

}  // namespace fork_probe

#endif  // SENTRY_TESTS_SESSION_FORK_PROBE_UTIL_H_
