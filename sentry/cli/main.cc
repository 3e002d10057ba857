// sentry: run untrusted programs in a user-space kernel.
#include <sys/prctl.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "sentry/base/fd_table.h"
#include "sentry/base/fs_identity.h"
#include "sentry/base/log.h"
#include "sentry/base/timeline.h"
#include "sentry/cli/commands.h"
#include "sentry/oci/spec.h"
#include "sentry/run/result.h"
#include "sentry/run/run.h"
#include "sentry/run/userns_root.h"

namespace {

constexpr const char* kUsage = R"(usage: sentry COMMAND [ARGS...]

Runs untrusted programs (above all, code a language model wrote) so that they
compute freely but touch nothing of the host: every syscall that names a file,
socket or process is answered by sentry from its own in-memory world.

Commands:
  run [FLAGS] -- CMD [ARGS...]   run CMD in a fresh sandbox (see: sentry run --help)
  syscalls [--json] [--no-namespaces]
                                 the syscall table: every x86-64 syscall and its action
  check [--json]                 whether sentry runs on this host, and with which walls
  pool --socket PATH [--size N]  keep sandboxes warm for `sentry run --pool PATH`
  serve --listen ADDR --token-file F   an HTTP API for agents (see: sentry serve --help)
  mcp                            an MCP server on stdio for agents (see: sentry mcp --help)
  help                           this text
  version                        sentry's release (also --version)

As an OCI runtime, sentry speaks runc's command line (create, start, state,
kill, delete, list, ps, features, spec; global flags --root, --log,
--log-format): see `sentry --root DIR --help`.

Exit codes: see `sentry run --help`.
)";

}  // namespace

int main(int argc, char** argv) {
  // No process of the caller's uid may ptrace or process_vm_readv the sentry
  // (a guest without namespaces may run as that uid), nor read its memory
  // through /proc; and no core file of it, which would hold the run's
  // secrets. Its children inherit this until they exec.
  prctl(PR_SET_DUMPABLE, 0);
  sentry::log::LevelFromEnvironment();
  sentry::timeline::OpenFromEnvironment();
  sentry::timeline::Mark("main");
  std::vector<std::string> args(argv + 1, argv + argc);
  // uid 0 of a user namespace without host ids (rootless podman's runtime
  // call, `unshare -r`) becomes the caller it stands for (OCI commands: their
  // create and run only; see OciCommand).
  if (!sentry::cli::IsOciInvocation(args)) {
    if (std::string err = sentry::LeaveNamespacedRoot(); !err.empty()) {
      std::fprintf(stderr, "sentry: %s\n", err.c_str());
      return sentry::kExitSentryError;
    }
  }
  if (!sentry::DropSupplementaryGroups()) {
    sentry::log::Notice("notice: cannot drop the supplementary groups of root (setgroups refused)");
  }
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? sentry::kExitSentryError : 0;
  }
  if (args[0] == "version" || args[0] == "--version") {
    // The OCI spec line as runc prints it (engines show it in their info).
    std::printf("sentry %s\nspec: %s\n", sentry::SentryVersion(), sentry::oci::kOciSpecVersion);
    return 0;
  }
  if (sentry::cli::IsOciInvocation(args)) {
    sentry::ReserveFdTable();
    return sentry::cli::OciCommand(args);
  }
  std::string cmd = args[0];
  args.erase(args.begin());
  sentry::ReserveFdTable();  // before any thread (see fd_table.h)
  if (cmd == "run") return sentry::cli::RunCommand(args);
  if (cmd == "syscalls") return sentry::cli::SyscallsCommand(args);
  if (cmd == "check") return sentry::cli::CheckCommand(args);
  if (cmd == "pool") return sentry::cli::PoolCommand(args);
  if (cmd == "serve") return sentry::cli::ServeCommand(args);
  if (cmd == "mcp") return sentry::cli::McpCommand(args);
  std::fprintf(stderr, "sentry: unknown command '%s'; try 'sentry help'\n", cmd.c_str());
  return sentry::kExitSentryError;
}
