#include "sentry/agent/mcp_content.h"

#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/agent/result_text.h"

namespace sentry::agent {
namespace {

using nlohmann::json;

// A file's bytes given as a resource blob, at most (the client gets them
// base64, a third more).
constexpr size_t kMaxBlobBytes = 4 << 20;
constexpr size_t kMaxResultText = 16 << 10;  // each MIME bundle's text

json Text(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }

json Image(std::string base64, const std::string& type) {
  return {{"type", "image"}, {"data", std::move(base64)}, {"mimeType", type}};
}

bool ValidUtf8(const std::string& s) {
  try {
    (void)json(s).dump();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

std::string Str(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.is_null() ? "none" : v.dump();
}

// The text of a MIME bundle a model reads best.
std::string BundleText(const json& bundle) {
  for (const char* mime : {"text/plain", "text/markdown", "text/html", "text/latex"}) {
    auto it = bundle.find(mime);
    if (it != bundle.end() && it->is_string()) return it->get<std::string>();
  }
  auto it = bundle.find("application/json");
  if (it != bundle.end()) return it->dump();
  return "";
}

std::string CellStatus(const json& r) {
  std::string line = "[";
  const json& count = r.value("executionCount", json());
  if (r.contains("exitCode") && !r["exitCode"].is_null()) {
    absl::StrAppend(&line, "exit code ", Str(r["exitCode"]));
  } else {
    absl::StrAppend(&line, "cell ", Str(count));
    const json& e = r.value("error", json());
    absl::StrAppend(&line,
                    e.is_object() ? absl::StrCat(": ", Str(e.value("name", json()))) : ": ok");
  }
  if (r.value("timedOut", false)) absl::StrAppend(&line, "; timedOut true");
  if (r.contains("limit") && !r["limit"].is_null())
    absl::StrAppend(&line, "; limit ", Str(r["limit"]));
  for (const char* s : {"stdoutDroppedBytes", "stderrDroppedBytes", "resultsDropped"}) {
    if (r.value(s, 0) > 0) absl::StrAppend(&line, "; ", s, " ", r.value(s, 0));
  }
  for (const json& d : r.value("denied", json::array())) {
    absl::StrAppend(&line, "; denied ", Str(d.value("argument", json(""))), " (",
                    Str(d.value("error", json(""))), ": ", Str(d.value("hint", json(""))), ")");
  }
  if (r.contains("sessionEnded") && r["sessionEnded"].is_object()) {
    absl::StrAppend(&line, "; the session ended: ", Str(r["sessionEnded"].value("reason", json())));
  }
  if (r.contains("durationMs") && r["durationMs"].is_number()) {
    absl::StrAppend(&line, "; ", absl::StrFormat("%.1f", r["durationMs"].get<double>()), " ms");
  }
  line += "]";
  return Clip(line, kMaxStatusText);
}

}  // namespace

std::string ImageType(const std::string& b) {
  auto starts = [&](const char* magic, size_t n) {
    return b.size() >= n && std::memcmp(b.data(), magic, n) == 0;
  };
  if (starts("\x89PNG\r\n\x1a\n", 8)) return "image/png";
  if (starts("\xff\xd8\xff", 3)) return "image/jpeg";
  if (starts("GIF87a", 6) || starts("GIF89a", 6)) return "image/gif";
  if (b.size() >= 12 && starts("RIFF", 4) && b.compare(8, 4, "WEBP") == 0) return "image/webp";
  return "";
}

json FileBlock(const std::string& path, const std::string& bytes, bool truncated, bool labelled) {
  std::string image = truncated ? "" : ImageType(bytes);
  if (!image.empty()) return Image(absl::Base64Escape(bytes), image);
  if (ValidUtf8(bytes)) {
    std::string label = labelled || truncated
                            ? absl::StrCat("file ", path, truncated ? " (truncated)" : "", ":\n")
                            : "";
    return Text(label + Clip(bytes, kMaxStreamText));
  }
  if (bytes.size() > kMaxBlobBytes) {
    return Text(absl::StrCat("file ", path, ": ", bytes.size(), " bytes of binary data"));
  }
  std::string uri = path.empty() || path[0] != '/' ? absl::StrCat("file:///home/sandbox/", path)
                                                   : absl::StrCat("file://", path);
  return {{"type", "resource"},
          {"resource",
           {{"uri", uri},
            {"mimeType", "application/octet-stream"},
            {"blob", absl::Base64Escape(bytes)}}}};
}

json RunContent(const json& r) {
  json content = json::array();
  std::string out = r.value("stdout", ""), err = r.value("stderr", "");
  if (!out.empty()) content.push_back(Text(Clip(out, kMaxStreamText)));
  if (!err.empty()) content.push_back(Text("stderr:\n" + Clip(err, kMaxStreamText)));
  auto files = r.find("files");
  if (files != r.end() && files->is_object()) {
    for (const auto& [path, f] : files->items()) {
      if (!f.is_object()) continue;
      if (f.contains("error")) {
        content.push_back(Text(absl::StrCat("file ", path, ": ", Str(f["error"]))));
        continue;
      }
      bool truncated = f.value("truncated", false);
      std::string bytes;
      if (f.contains("text") && f["text"].is_string()) {
        bytes = f["text"].get<std::string>();
      } else if (!f.contains("base64") || !f["base64"].is_string() ||
                 !absl::Base64Unescape(f["base64"].get<std::string>(), &bytes)) {
        continue;
      }
      content.push_back(FileBlock(path, bytes, truncated));
    }
  }
  content.push_back(Text(StatusLine(r)));
  return content;
}

json CellContent(const json& r) {
  json content = json::array();
  std::string out = r.value("stdout", ""), err = r.value("stderr", "");
  if (!out.empty()) content.push_back(Text(Clip(out, kMaxStreamText)));
  if (!err.empty()) content.push_back(Text("stderr:\n" + Clip(err, kMaxStreamText)));
  for (const json& bundle : r.value("results", json::array())) {
    if (!bundle.is_object()) continue;
    bool shown = false;
    for (const char* mime : {"image/png", "image/jpeg", "image/gif", "image/webp"}) {
      auto it = bundle.find(mime);
      if (!shown && it != bundle.end() && it->is_string()) {
        content.push_back(Image(it->get<std::string>(), mime));
        shown = true;
      }
    }
    if (!shown) {
      std::string text = BundleText(bundle);
      if (!text.empty()) content.push_back(Text(Clip(text, kMaxResultText)));
    }
  }
  const json& e = r.value("error", json());
  const bool command = r.contains("exitCode") && !r["exitCode"].is_null();
  if (e.is_object() && !(command && e.value("traceback", json::array()).empty())) {
    std::string tb;
    for (const json& line : e.value("traceback", json::array())) {
      if (line.is_string()) absl::StrAppend(&tb, line.get<std::string>(), "\n");
    }
    if (tb.empty())
      tb = absl::StrCat(Str(e.value("name", json())), ": ", Str(e.value("value", json())));
    content.push_back(Text(Clip(tb, kMaxStreamText)));
  }
  content.push_back(Text(CellStatus(r)));
  return content;
}

bool CellFailed(const json& r) {
  const json& exit_code = r.value("exitCode", json());
  return r.value("error", json()).is_object() || r.value("timedOut", false) ||
         !r.value("limit", json()).is_null() || (exit_code.is_number() && exit_code != 0) ||
         r.contains("sessionEnded");
}

}  // namespace sentry::agent
