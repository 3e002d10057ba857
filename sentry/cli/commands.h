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
int ServeCommand(const std::vector<std::string>& args);
int McpCommand(const std::vector<std::string>& args);

}  // namespace sentry::cli

#endif  // SENTRY_CLI_COMMANDS_H_
