// A host tool the guest may call (`--tool NAME=HOST_COMMAND`): its name, the
// command the operator wrote, and the caps every run's calls share. The
// guest reaches tools only through the sentry's channel (tool_channel.h);
// the command runs on the host with nothing of the guest but its arguments
// (tool_runner.h).
#ifndef SENTRY_TOOLS_HOST_TOOL_H_
#define SENTRY_TOOLS_HOST_TOOL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sentry::tools {

// The caps of one run's tool calls (README "Tools inside").
inline constexpr size_t kMaxCalls = 64;             // calls per run
inline constexpr size_t kMaxArgBytes = 64 << 10;    // one call's kwargs, as JSON
inline constexpr size_t kMaxResultBytes = 1 << 20;  // one tool's stdout
inline constexpr int kCallTimeoutMs = 10'000;       // one call, within the run's timeout
inline constexpr size_t kMaxStderrBytes = 2048;     // of a tool's stderr, kept for its error
inline constexpr size_t kMaxOpenChannels = 8;       // channel fds open at once
inline constexpr size_t kMaxOpens = 256;            // opens of the channel per run
inline constexpr size_t kMaxTools = 64;             // tools registered
inline constexpr size_t kMaxJsonDepth = 128;        // nesting of a request or an answer
inline constexpr size_t kMaxFrameBytes = kMaxArgBytes + 1024;  // a request, envelope included

// Where the guest finds the channel and the module.
inline constexpr const char* kChannelPath = "/dev/sentry-tools";
// A package, so that its __pycache__ can be the guest's own (a cached
// compile is then written, not denied).
inline constexpr const char* kModuleDir = "/usr/lib/python3/dist-packages/sentry_tools";
inline constexpr const char* kModulePath =
    "/usr/lib/python3/dist-packages/sentry_tools/__init__.py";

struct HostTool {
  std::string name;               // a Python identifier
  std::vector<std::string> argv;  // argv[0] absolute (resolved at registration)
};

// Parses one --tool value, NAME=HOST_COMMAND. HOST_COMMAND is split into
// words as a shell would ('...' literal, "..." and \ escapes) but no shell
// runs it: an unquoted | ; & < > ( ) $ ` * ? is refused, so that the command
// means what it says. "" or what is wrong.
std::string ParseToolFlag(const std::string& value, HostTool* out);

// Adds tool to tools: "" or why not (a name taken twice, too many tools).
std::string AddTool(std::vector<HostTool>& tools, HostTool tool);

// The shell-like word split alone: false with *why.
bool SplitCommandWords(const std::string& command, std::vector<std::string>* words,
                       std::string* why);

// Whether s nests arrays and objects at most max_depth deep (counted
// outside strings): checked before a parse, whose recursion it bounds.
bool JsonDepthAtMost(const std::string& s, size_t max_depth);

}  // namespace sentry::tools

#endif  // SENTRY_TOOLS_HOST_TOOL_H_
