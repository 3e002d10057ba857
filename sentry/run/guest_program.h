// What the guest starts with: its environment, its rlimits, and the program
// its first execve runs, found before the sandbox starts so that a run fails
// early with a clear message and the right exit code.
#ifndef SENTRY_RUN_GUEST_PROGRAM_H_
#define SENTRY_RUN_GUEST_PROGRAM_H_

#include <string>
#include <vector>

#include "loader/loader.h"
#include "sentry/run/run.h"
#include "sentry/run/sandbox_tree.h"
#include "vfs/vfs.h"

namespace sentry {

// The guest's whole environment: a clean one (TERM, the caller's or xterm,
// if the guest has a terminal), plus --env.
std::vector<std::string> GuestEnv(const RunOptions& o, const TreeConfig& tree, bool terminal);

// The rlimits the guest sets before its execve: base (those of the seccomp
// wall alone), then the ones that hold where no cgroup does, the process
// count and the open files. The guest sets them after it dropped its
// capabilities, so it can only lower them: one above the sentry's own hard
// limit is refused, with *error saying so.
std::vector<GuestLaunch::Rlimit> GuestRlimits(const RunOptions& o, bool memory_cgroup,
                                              bool cpu_cgroup,
                                              std::vector<GuestLaunch::Rlimit> base,
                                              std::string* error);

struct ProgramLookup {
  std::string path;   // where the first execve finds the program
  int exit_code = 0;  // else kExitNotFound or kExitCannotExec, with error
  std::string error;
};

// argv0 found as execvp would (a bare name on the guest's PATH, else from
// cwd) and checked to be an executable regular file. copy_hint: how this
// caller puts files in (RunOptions::copy_hint), said when it is not found.
ProgramLookup FindProgram(vfs::Vfs& v, const vfs::NodeRef& cwd, const vfs::Creds& creds,
                          const std::string& argv0, const std::string& copy_hint = "");

}  // namespace sentry

#endif  // SENTRY_RUN_GUEST_PROGRAM_H_
