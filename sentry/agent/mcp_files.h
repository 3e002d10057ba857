// The files a tools/call's returnFiles brought back, as MCP content blocks a
// client can use: a text file as text (its name on the first line), an image
// (PNG, JPEG, GIF, WebP) as image content, other bytes as an embedded
// resource with a base64 blob. Its URI is "sandbox:" and the name as asked.
#ifndef SENTRY_AGENT_MCP_FILES_H_
#define SENTRY_AGENT_MCP_FILES_H_

#include "nlohmann/json.hpp"

namespace sentry::agent {

// Appends to content one block per entry of result["files"] (and a line for
// result["filesLimit"]).
void AppendFileContent(const nlohmann::json& result, nlohmann::json* content);

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_MCP_FILES_H_
