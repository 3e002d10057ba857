// What a tools/call result gives the model as MCP content blocks: text, and
// an `image` block (base64 data, mimeType) for each PNG, JPEG, GIF or WebP
// image, so a plot reaches a client as a picture. Every text is clipped
// (result_text.h); images are as bounded as the result that holds them.
//
//   run (run_python, run_command): stdout, "stderr:\n..." (when not empty),
//     one block per returned file (returnFiles), the status line.
//   session cell or command: stdout, stderr, one block per MIME bundle of
//     `results` (an image when it has one, else its text: text/plain, then
//     markdown, html, json), the error's traceback, a status line.
//   read_file: one block for the file's bytes.
#ifndef SENTRY_AGENT_MCP_CONTENT_H_
#define SENTRY_AGENT_MCP_CONTENT_H_

#include <string>

#include "nlohmann/json.hpp"

namespace sentry::agent {

// The image MIME type of bytes (by their magic), or "" if they are none.
std::string ImageType(const std::string& bytes);

// A block for a file's bytes: an image, text (UTF-8, clipped; labelled:
// "file PATH:" first), or an embedded resource with its base64 blob.
nlohmann::json FileBlock(const std::string& path, const std::string& bytes, bool truncated,
                         bool labelled = true);

// The blocks of a run's result (`sentry run --json`'s object).
nlohmann::json RunContent(const nlohmann::json& result);

// The blocks of a session cell's (or command's) result, and whether the
// model should hear it as a failure (an error, a timeout, a limit, a
// command's non-zero exit, the session's end).
nlohmann::json CellContent(const nlohmann::json& result);
bool CellFailed(const nlohmann::json& result);

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_MCP_CONTENT_H_
