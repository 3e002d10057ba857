#include "sentry/agent/mcp_files.h"

#include <cctype>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace sentry::agent {
namespace {

using nlohmann::json;

std::string ImageType(const std::string& b) {
  auto starts = [&](const char* magic, size_t n) { return b.compare(0, n, magic, n) == 0; };
  if (starts("\x89PNG\r\n\x1a\n", 8)) return "image/png";
  if (starts("\xff\xd8\xff", 3)) return "image/jpeg";
  if (starts("GIF87a", 6) || starts("GIF89a", 6)) return "image/gif";
  if (starts("RIFF", 4) && b.size() >= 12 && b.compare(8, 4, "WEBP") == 0) return "image/webp";
  return "";
}

// A URI for a guest name: its bytes outside RFC 3986's unreserved and '/'
// percent-encoded.
std::string Uri(const std::string& name) {
  std::string out = "sandbox:";
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&out, "%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return out;
}

}  // namespace

void AppendFileContent(const json& result, json* content) {
  auto files = result.find("files");
  if (files != result.end() && files->is_object()) {
    for (const auto& [name, f] : files->items()) {
      if (f.contains("error")) {
        content->push_back(
            {{"type", "text"},
             {"text", absl::StrCat("file ", name, ": not returned (", f.value("error", ""), ")")}});
        continue;
      }
      std::string cut = f.value("truncated", false)
                            ? absl::StrCat(", its first bytes of ", f.value("size", 0ull))
                            : "";
      if (f.contains("text")) {
        content->push_back(
            {{"type", "text"},
             {"text", absl::StrCat("file ", name, cut, ":\n", f.value("text", ""))}});
        continue;
      }
      std::string b64 = f.value("base64", "");
      std::string bytes;
      absl::Base64Unescape(b64, &bytes);
      std::string image = ImageType(bytes);
      if (!image.empty() && cut.empty()) {
        content->push_back({{"type", "image"}, {"data", b64}, {"mimeType", image}});
      } else {
        content->push_back(
            {{"type", "resource"},
             {"resource",
              {{"uri", Uri(name)}, {"mimeType", "application/octet-stream"}, {"blob", b64}}}});
      }
    }
  }
  auto limit = result.find("filesLimit");
  if (limit != result.end() && limit->is_string()) {
    content->push_back(
        {{"type", "text"},
         {"text", absl::StrCat("returnFiles stopped: ", limit->get<std::string>())}});
  }
}

}  // namespace sentry::agent
