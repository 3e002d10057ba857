#include "sentry/run/script_copy.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sentry/base/fs_identity.h"
#include "sentry/base/log.h"
#include "sentry/base/unique_fd.h"
#include "sentry/run/sandbox_tree.h"

namespace sentry {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

std::string OpenRefusal(int err) {
  switch (err) {
    case ENOENT:
      return "there is no such file";
    case ELOOP:
      return "it is a symbolic link or lies under one";
    case EXDEV:
      return "it leads out of the current directory";
    case EACCES:
      return absl::StrCat("uid ", getuid(), " may not read it");
    default:
      return std::strerror(err);
  }
}

// Bytes that would break the notice's one line are shown as '?'.
std::string OneLine(const std::string& s) {
  std::string out = s.substr(0, 512);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

void Notice(const std::string& arg, const std::string& why) {
  log::Notice(absl::StrCat(OneLine(arg), " not copied in: ", why,
                           "; --copy HOST:GUEST copies any file (the rule: sentry run --help)"));
}

// Index in argv of the script argument: the first after argv[0] that does
// not start with '-'; 0 if there is none.
size_t ScriptArgumentIndex(const std::vector<std::string>& argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i].empty()) return 0;
    if (argv[i][0] != '-') return i;
  }
  return 0;
}

// Whether the name ends in a suffix that scripting languages use.
bool HasScriptSuffix(const std::string& path) {
  static constexpr const char* kSuffixes[] = {"py",  "pyw", "sh", "bash", "zsh", "ksh", "js",
                                              "mjs", "cjs", "ts", "rb",   "pl",  "pm",  "php",
                                              "lua", "R",   "r",  "tcl",  "awk", "sed", "jl"};
  std::string name = path.substr(path.rfind('/') + 1);
  size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0) return false;
  std::string suffix = name.substr(dot + 1);
  for (const char* s : kSuffixes) {
    if (suffix == s) return true;
  }
  return false;
}

// A host file the caller meant the program to read, as the caller (the
// thread's identity) sees it: a regular file, or anything with a script's
// name, unless the caller can tell it is not there at all (then it is the
// program's business).
bool LooksMeant(const std::string& arg) {
  struct stat st;
  if (stat(arg.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return true;
  if (!HasScriptSuffix(arg)) return false;
  return lstat(arg.c_str(), &st) == 0 || (errno != ENOENT && errno != ENOTDIR);
}

// The path's components without "." and empty ones; false (and nothing in
// *parts) if the path is absolute or has a ".." component.
bool RelativeBelow(const std::string& path, std::vector<std::string>* parts) {
  parts->clear();
  if (path.empty() || path[0] == '/') return false;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") {
      parts->clear();
      return false;
    }
    parts->emplace_back(part);
  }
  return true;
}

// The script at relative_path below dir_fd, read with the calling thread's
// file-system identity (the caller's real one, see CallerFsIdentity). why is
// "" on success, else why it was refused, for the notice.
struct HostScript {
  std::string text;
  mode_t mode = 0;
  std::string why;
};

HostScript ReadHostScript(int dir_fd, const std::string& relative_path) {
  HostScript out;
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  UniqueFd at(
      static_cast<int>(syscall(SYS_openat2, dir_fd, relative_path.c_str(), &how, sizeof(how))));
  if (!at) {
    out.why = OpenRefusal(errno);
    return out;
  }
  struct stat st;
  if (fstat(at.get(), &st) < 0) {
    out.why = std::strerror(errno);
    return out;
  }
  if (!S_ISREG(st.st_mode)) {
    out.why = absl::StrCat("it is ", KindOf(st.st_mode), ", not a regular file");
    return out;
  }
  std::string too_big = absl::StrCat("it is larger than ", kMaxScriptBytes >> 20, " MiB");
  if (static_cast<uint64_t>(st.st_size) > kMaxScriptBytes) {
    out.why = too_big;
    return out;
  }
  // Opened again through the fd, never the path: the file read is the file
  // checked, and the open is the permission check (as the caller).
  UniqueFd file(open(absl::StrCat("/proc/self/fd/", at.get()).c_str(),
                     O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!file) {
    out.why = OpenRefusal(errno);
    return out;
  }
  char buf[1 << 16];
  while (out.text.size() <= kMaxScriptBytes) {
    ssize_t n = read(file.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.why = std::strerror(errno);
      return out;
    }
    if (n == 0) break;
    out.text.append(buf, static_cast<size_t>(n));
  }
  if (out.text.size() > kMaxScriptBytes) {
    out.why = too_big;  // it grew while being read
  } else if (!HasScriptSuffix(relative_path) && !absl::StartsWith(out.text, "#!")) {
    out.why = "it does not look like a script (no script suffix such as .py or .sh, no #! line)";
  }
  if (!out.why.empty()) out.text.clear();
  out.mode = st.st_mode & 0777;
  return out;
}

bool InSandbox(vfs::Vfs& v, const vfs::Creds& creds, const std::string& guest_cwd,
               const std::string& arg) {
  return v.Lookup(v.root(), arg[0] == '/' ? arg : guest_cwd + "/" + arg, {}, creds).ok();
}

ScriptCopy CopyOne(const std::string& arg, vfs::Vfs& v, const vfs::Creds& creds,
                   const std::string& guest_cwd) {
  // Already in the sandbox (a --copy, a file of the lower layers): it is
  // the one the program gets.
  if (InSandbox(v, creds, guest_cwd, arg)) return {};
  std::vector<std::string> parts;
  bool below = RelativeBelow(arg, &parts);
  std::string relative = absl::StrJoin(parts, "/");
  HostScript script;
  {
    CallerFsIdentity as_caller;
    if (!as_caller.ok()) {
      if (!HasScriptSuffix(arg)) return {};
      script.why = "the sentry could not take the caller's uid to read it";
    } else if (!LooksMeant(arg)) {
      return {};
    } else if (arg[0] == '/') {
      script.why = "it is an absolute path";
    } else if (!below) {
      script.why = "it leads out of the current directory (..)";
    } else if (!parts.empty()) {
      script = ReadHostScript(AT_FDCWD, relative);
    } else {
      return {};
    }
  }
  if (!script.why.empty()) {
    Notice(arg, script.why);
    return {};
  }
  std::string guest = absl::StrCat(guest_cwd, "/", relative);
  if (absl::Status s = WriteIntoSandbox(v, creds, script.text, script.mode, guest); !s.ok()) {
    log::Notice(absl::StrCat("could not copy the script ", OneLine(arg), " in: ", s.message()),
                log::Level::kWarn);
    return {};
  }
  return ScriptCopy{relative, std::move(script.text)};
}

// Scripts and host files named after the script argument (`python3 -W
// ignore job.py`, `python3 main.py helper.py`, `python3 analyze.py data.csv`)
// are not copied: one line says so, for the first of them, with how many more
// there are, as for the script argument itself (`cat data.csv`).
void NoticeLaterScripts(const std::vector<std::string>& argv, size_t from, vfs::Vfs& v,
                        const vfs::Creds& creds, const std::string& guest_cwd) {
  std::vector<const std::string*> left;
  {
    CallerFsIdentity as_caller;
    if (!as_caller.ok()) return;
    struct stat st;
    for (size_t i = from; i < argv.size(); ++i) {
      const std::string& a = argv[i];
      if (a.empty() || a[0] == '-') continue;
      if ((HasScriptSuffix(a) && lstat(a.c_str(), &st) == 0) || LooksMeant(a)) left.push_back(&a);
    }
  }
  std::erase_if(left, [&](const std::string* a) { return InSandbox(v, creds, guest_cwd, *a); });
  if (left.empty()) return;
  std::string why =
      HasScriptSuffix(*left[0])
          ? "only one script is, the first argument after the program not starting with '-'"
          : "only the script argument is copied in (the first after the program not starting "
            "with '-')";
  if (left.size() > 1) absl::StrAppend(&why, " (", left.size() - 1, " more like it)");
  Notice(*left[0], why);
}

}  // namespace

ScriptCopy CopyScriptArgument(const RunOptions& o, vfs::Vfs& v, const vfs::Creds& creds,
                              const std::string& guest_cwd) {
  size_t i = ScriptArgumentIndex(o.argv);
  if (i == 0 || !o.copy_script) return {};
  ScriptCopy copied = CopyOne(o.argv[i], v, creds, guest_cwd);
  NoticeLaterScripts(o.argv, i + 1, v, creds, guest_cwd);
  return copied;
}

}  // namespace sentry
