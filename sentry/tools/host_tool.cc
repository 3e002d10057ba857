#include "sentry/tools/host_tool.h"

#include <unistd.h>

#include <cstdlib>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace sentry::tools {
namespace {

bool IsIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// Python's keywords and the module's own names: not a tool's.
bool Reserved(const std::string& s) {
  static const std::set<std::string> kReserved = {
      "False",   "None",     "True",     "and",       "as",    "assert", "async",  "await",
      "break",   "class",    "continue", "def",       "del",   "elif",   "else",   "except",
      "finally", "for",      "from",     "global",    "if",    "import", "in",     "is",
      "lambda",  "nonlocal", "not",      "or",        "pass",  "raise",  "return", "try",
      "while",   "with",     "yield",    "ToolError", "names", "call"};
  return kReserved.contains(s);
}

// The program, found as the operator's shell would find it, made absolute:
// the tool then runs with a PATH of its own.
std::string Resolve(const std::string& program, std::string* why) {
  if (program.find('/') != std::string::npos) {
    if (access(program.c_str(), X_OK) != 0) {
      *why = absl::StrCat(program, " is not an executable file");
      return "";
    }
    if (program[0] == '/') return program;
    char cwd[4096];
    if (!getcwd(cwd, sizeof(cwd))) {
      *why = "cannot read the current directory";
      return "";
    }
    return absl::StrCat(cwd, "/", program);
  }
  const char* path = getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':')) {
    if (dir.empty() || dir[0] != '/') continue;
    std::string candidate = absl::StrCat(dir, "/", program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  *why = absl::StrCat(program, " is not on PATH");
  return "";
}

}  // namespace

bool SplitCommandWords(const std::string& command, std::vector<std::string>* words,
                       std::string* why) {
  words->clear();
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words->push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      size_t end = command.find('\'', i + 1);
      if (end == std::string::npos) {
        *why = "an unclosed '";
        return false;
      }
      word += command.substr(i + 1, end - i - 1);
      in_word = true;
      i = end;
    } else if (c == '"') {
      in_word = true;
      for (++i;; ++i) {
        if (i >= command.size()) {
          *why = "an unclosed \"";
          return false;
        }
        if (command[i] == '"') break;
        if (command[i] == '$' || command[i] == '`') {
          *why = "$ and ` are shell expansions, and no shell runs a tool";
          return false;
        }
        if (command[i] == '\\' && i + 1 < command.size() &&
            (command[i + 1] == '"' || command[i + 1] == '\\')) {
          ++i;
        }
        word += command[i];
      }
    } else if (c == '\\') {
      if (i + 1 >= command.size()) {
        *why = "a trailing \\";
        return false;
      }
      word += command[++i];
      in_word = true;
    } else if (std::string_view("|;&<>()$`*?[]{}~#").find(c) != std::string_view::npos) {
      *why = absl::StrCat("'", std::string(1, c),
                          "' would mean something to a shell, and no shell runs a tool: quote "
                          "it, or put the pipeline in a script");
      return false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words->push_back(std::move(word));
  if (words->empty()) *why = "no command";
  return !words->empty();
}

std::string ParseToolFlag(const std::string& value, HostTool* out) {
  size_t eq = value.find('=');
  if (eq == std::string::npos) return "needs NAME=HOST_COMMAND";
  std::string name = value.substr(0, eq);
  if (!IsIdentifier(name) || Reserved(name)) {
    return absl::StrCat(
        "the name \"", name.substr(0, 80),
        "\" is not a tool name (a letter, then letters, digits or _, at most 64, not a Python "
        "keyword)");
  }
  std::string why;
  std::vector<std::string> words;
  if (!SplitCommandWords(value.substr(eq + 1), &words, &why)) return why;
  std::string program = Resolve(words[0], &why);
  if (program.empty()) return why;
  words[0] = program;
  out->name = std::move(name);
  out->argv = std::move(words);
  return "";
}

std::string AddTool(std::vector<HostTool>& tools, HostTool tool) {
  for (const HostTool& t : tools) {
    if (t.name == tool.name) return absl::StrCat("--tool ", tool.name, " is given twice");
  }
  if (tools.size() >= kMaxTools) return absl::StrCat("at most ", kMaxTools, " tools");
  tools.push_back(std::move(tool));
  return "";
}

bool JsonDepthAtMost(const std::string& s, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

}  // namespace sentry::tools
