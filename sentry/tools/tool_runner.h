// Runs one host tool for one call, outside the sandbox: the kwargs as one
// JSON object on its stdin, one JSON value expected on its stdout. The tool
// gets nothing of the guest but those bytes: a clean environment (PATH
// only), a fresh empty directory of its own as cwd (removed after), no fd
// but its stdin, stdout and stderr, and its stderr kept (clipped) for the
// error message. It runs under a subreaper of its own that kills every
// descendant (setsid, double forks included) at the end of the call, at its
// timeout or when the run ends: nothing of a call outlives it.
#ifndef SENTRY_TOOLS_TOOL_RUNNER_H_
#define SENTRY_TOOLS_TOOL_RUNNER_H_

#include <nlohmann/json.hpp>
#include <string>

#include "sentry/tools/host_tool.h"

namespace sentry::tools {

// Milliseconds of CLOCK_MONOTONIC (the channel's and the runner's deadlines).
double NowMs();

struct ToolOutcome {
  bool ok = false;
  nlohmann::json value;  // ok: the tool's JSON value, as parsed
  std::string error;     // !ok: what the guest's ToolError says
};

// cancel_fd: readable when the run ends (the call is killed then); -1 for none.
ToolOutcome RunHostTool(const HostTool& tool, const std::string& args_json, int timeout_ms,
                        int cancel_fd);

}  // namespace sentry::tools

#endif  // SENTRY_TOOLS_TOOL_RUNNER_H_
