#include "sentry/cli/commands.h"
namespace sentry::cli {
int ServeCommand(const std::vector<std::string>& args) { return 125; }
}  // namespace sentry::cli
