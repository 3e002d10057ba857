// The subcommands of the sentry binary, one file each.
#ifndef SENTRY_CLI_COMMANDS_H_
#define SENTRY_CLI_COMMANDS_H_

#include <string>
#include <vector>

namespace sentry::cli {

int RunCommand(const std::vector<std::string>& args);
int SyscallsCommand(const std::vector<std::string>& args);
int CheckCommand(const std::vector<std::string>& args);
int PoolCommand(const std::vector<std::string>& args);
// runc's command line (oci_command.cc): args is the whole command line, global
// flags first; IsOciInvocation tells it from sentry's own commands.
bool IsOciInvocation(const std::vector<std::string>& args);
int OciCommand(const std::vector<std::string>& args);
int ServeCommand(const std::vector<std::string>& args);
int McpCommand(const std::vector<std::string>& args);

}  // namespace sentry::cli

#endif  // SENTRY_CLI_COMMANDS_H_
