// The script argument: `sentry run -- python3 job.py` copies job.py from the
// caller's cwd into the guest's, so that the command runs as it would on the
// host.
//
// Callers pass argv that a model wrote, and the sentry reads host files as
// root: the copy is a host read that nobody asked for unless the rule is
// narrow. So the sentry copies one file, and only what the caller clearly
// named as a script of its own:
//   - the first argument after the program that does not start with '-';
//   - a relative path below the caller's cwd: no `..`, no symlink anywhere on
//     the way (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
//   - opened with the caller's real uid, gid and groups as the thread's
//     file-system identity, so the host kernel decides, as for access(2),
//     whether the caller could read it (mode bits, ACLs, the directories);
//   - a regular file (checked on the opened file, not the path) of at most
//     kMaxScriptBytes, read once: what is copied is what was checked;
//   - that looks like a script: a script suffix (.py, .sh...) or a `#!` line.
// An argument that fails the rule and still looks meant (a script suffix, or
// a regular file the caller can see) gets one line on stderr, "sentry: ...",
// saying what was not copied, why, and that --copy HOST:GUEST copies it; so
// does the first later argument with a script suffix that the host has.
// --no-copy-script turns the whole thing off, silently.
#ifndef SENTRY_RUN_SCRIPT_COPY_H_
#define SENTRY_RUN_SCRIPT_COPY_H_

#include <cstddef>
#include <string>

#include "sentry/run/run.h"
#include "vfs/vfs.h"

namespace sentry {

inline constexpr size_t kMaxScriptBytes = 4 << 20;

// What a run copied in: its name on the command line (relative to the
// caller's cwd) and the exact bytes the guest got, for the audit log.
struct ScriptCopy {
  std::string host_path;  // "" when nothing was copied
  std::string text;
};

// Copies the script argument of o.argv to the same relative path under
// guest_cwd, by the rule above; prints the notice where it does not.
ScriptCopy CopyScriptArgument(const RunOptions& o, vfs::Vfs& v, const vfs::Creds& creds,
                              const std::string& guest_cwd);

}  // namespace sentry

#endif  // SENTRY_RUN_SCRIPT_COPY_H_
