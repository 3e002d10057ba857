// The one way from the guest to the host tools: /dev/sentry-tools. Each open
// of it gives the guest one end of a fresh unix socketpair; this channel's
// thread serves the other end. Frames are a 4-byte big-endian length, then
// that many bytes of JSON: the guest sends {"tool": NAME, "args": {...}},
// the sentry answers {"ok": VALUE} or {"error": MESSAGE}. Each request is
// read once into the sentry's memory and bounded (host_tool.h's caps); a
// frame too large, malformed or past the call cap is answered with an error
// and its connection closed. Calls run one at a time, in order.
#ifndef SENTRY_TOOLS_TOOL_CHANNEL_H_
#define SENTRY_TOOLS_TOOL_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"
#include "sentry/run/result.h"
#include "sentry/tools/host_tool.h"

namespace sentry::tools {

class ToolChannel final {
 public:
  explicit ToolChannel(std::vector<HostTool> tools);
  ToolChannel(const ToolChannel&) = delete;
  ToolChannel& operator=(const ToolChannel&) = delete;
  ~ToolChannel();

  // Starts the serving thread. False if it cannot (no eventfd).
  bool Start();
  // A new connection: the guest's end, with open's O_NONBLOCK and
  // O_CLOEXEC. EBUSY past kMaxOpenChannels at once or kMaxOpens in all.
  SysResult<UniqueFd> Open(int flags);
  // Ends the channel: a running tool is killed, the thread joined.
  void Stop();
  // The calls made, in order (ToolCall in result.h).
  std::vector<ToolCall> Calls();

 private:
  struct Conn;
  void Serve();
  // One complete frame: the answer to send.
  std::string Answer(const std::string& frame);
  void Record(ToolCall call);

  const std::vector<HostTool> tools_;
  UniqueFd wake_;    // eventfd: a new connection, or Stop
  UniqueFd cancel_;  // eventfd: readable once Stop is called
  std::thread thread_;
  std::mutex mu_;
  std::vector<UniqueFd> pending_;  // connections Open made, for Serve to take
  size_t open_now_ = 0, opens_ = 0;
  std::vector<ToolCall> calls_;
  size_t requests_ = 0;  // the serving thread's alone
  std::atomic<bool> stopping_{false};
};

// The module the guest imports: sentry_tools.NAME(**kwargs) for each tool.
std::string ModuleText(const std::vector<HostTool>& tools);

}  // namespace sentry::tools

#endif  // SENTRY_TOOLS_TOOL_CHANNEL_H_
