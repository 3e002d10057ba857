// The text of sentry_tools.py, the guest's side of the channel (see
// tool_channel.h for the protocol). Each call opens /dev/sentry-tools, sends
// one frame, reads one answer and closes: a fork or a thread of the guest
// shares nothing.
#include "absl/strings/str_cat.h"
#include "sentry/tools/tool_channel.h"

namespace sentry::tools {

std::string ModuleText(const std::vector<HostTool>& tools) {
  std::string text = R"PY("""Host tools this sandbox may call (sentry --tool NAME=COMMAND).

sentry_tools.NAME(**kwargs) sends the keyword arguments (JSON) to the host
tool NAME through the sentry and returns the JSON value it answers; a tool
that fails, times out or answers no JSON raises ToolError.
"""
import json as _json
import os as _os
import struct as _struct

_CHANNEL = "/dev/sentry-tools"


class ToolError(Exception):
    """A tool call that did not return a value: the message says why."""


def _read_exactly(fd, n):
    data = b""
    while len(data) < n:
        chunk = _os.read(fd, n - len(data))
        if not chunk:
            raise ToolError("the sentry closed the tool channel")
        data += chunk
    return data


def call(name, **kwargs):
    """Calls the host tool name with kwargs; returns its answer."""
    body = _json.dumps({"tool": name, "args": kwargs}).encode()
    fd = _os.open(_CHANNEL, _os.O_RDWR | _os.O_CLOEXEC)
    try:
        frame = _struct.pack(">I", len(body)) + body
        while frame:
            frame = frame[_os.write(fd, frame):]
        (size,) = _struct.unpack(">I", _read_exactly(fd, 4))
        answer = _json.loads(_read_exactly(fd, size))
    finally:
        _os.close(fd)
    if "error" in answer:
        raise ToolError(answer["error"])
    return answer["ok"]


def _tool(name):
    def tool(**kwargs):
        return call(name, **kwargs)
    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = "Host tool %s: returns its JSON answer." % name
    return tool


names = (
)PY";
  for (const HostTool& t : tools) absl::StrAppend(&text, "    \"", t.name, "\",\n");
  absl::StrAppend(&text, ")\n");
  for (const HostTool& t : tools) absl::StrAppend(&text, t.name, " = _tool(\"", t.name, "\")\n");
  return text;
}

}  // namespace sentry::tools
