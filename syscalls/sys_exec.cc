#include "syscalls/sys_exec.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>

#include "syscalls/common.h"
#include "vfs/store.h"

namespace sentry::sys {
namespace {

constexpr size_t kBinprmBufSize = 256;  // BINPRM_BUF_SIZE

bool UnderRoot(const std::string& path, const std::vector<std::string>& roots) {
  for (const std::string& r : roots) {
    if (path.size() > r.size() && path.compare(0, r.size(), r) == 0 && path[r.size()] == '/') {
      return true;
    }
  }
  return false;
}

bool IsScript(std::string_view head) {
  return head.size() >= 2 && head[0] == '#' && head[1] == '!';
}

// One file of an exec's chain: where the kernel would find it, who it is, and
// its first bytes (as much as binfmt_script reads).
struct ExecFile {
  std::string view_path;
  bool in_memory = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string head;
};

SysResult<ExecFile> OpenExecFile(SyscallContext& ctx, const vfs::NodeRef& node,
                                 const std::vector<std::string>& view_roots) {
  if (node->kind() == vfs::NodeKind::kSymlink) return Errno{ELOOP};
  if (node->kind() != vfs::NodeKind::kFile) return Errno{EACCES};
  SYS_TRY(ctx.vfs().Permission(*node, X_OK, ctx.creds()));
  ExecFile file;
  int fd;
  if (node->IsLowerFile()) {
    file.view_path = node->lower_parent->path + "/" + node->lower_name;
    if (!UnderRoot(file.view_path, view_roots)) return Errno{EACCES};
    fd = openat(node->lower_parent->fd.get(), node->lower_name.c_str(),
                O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  } else {
    file.view_path = ctx.vfs().store().exec_dir() + "/" + node->store_name;
    file.in_memory = true;
    fd = openat(ctx.vfs().store().dir_fd(), node->store_name.c_str(),
                O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) return Errno{EACCES};
  UniqueFd owned(fd);
  struct stat st;
  if (fstat(fd, &st) < 0) return Errno{EACCES};
  file.dev = st.st_dev;
  file.ino = st.st_ino;
  char buf[kBinprmBufSize];
  ssize_t n = pread(fd, buf, sizeof(buf), 0);
  if (n > 0) file.head.assign(buf, n);
  return file;
}

// bprm->filename, the name a script's interpreter is given: the caller's own,
// or /dev/fd/N[/name] for one relative to an execveat dirfd (fs/exec.c).
std::string ExecFilename(int dirfd, const std::string& name) {
  if (dirfd == AT_FDCWD || (!name.empty() && name[0] == '/')) return name;
  std::string fd = "/dev/fd/" + std::to_string(dirfd);
  return name.empty() ? fd : fd + "/" + name;
}

// The sandbox path of a file the kernel only knows by its store name.
std::string SandboxPath(SyscallContext& ctx, int dirfd, const std::string& name) {
  if (name.empty() || name[0] == '/') return name;
  auto start = StartDir(ctx, dirfd, name);
  if (!start.ok()) return name;
  auto dir = ctx.vfs().PathOf(*start);
  if (!dir.ok()) return name;
  return (*dir == "/" ? "" : *dir) + "/" + name;
}

}  // namespace

// An ELF image this kernel runs only through IA32 emulation (i386, x32) or
// not at all (another machine). The sentry's exec check reads the new stack
// as x86-64's, so such an image is refused with ENOEXEC, as a kernel built
// without IA32_EMULATION refuses it: ldd then skips /lib/ld-linux.so.2 as on a
// 64-bit-only system (fs/binfmt_elf.c, elf_check_arch).
bool IsForeignElf(std::string_view head) {
  if (head.size() < SELFMAG || head[0] != ELFMAG0 || head[1] != ELFMAG1 || head[2] != ELFMAG2 ||
      head[3] != ELFMAG3) {
    return false;
  }
  constexpr size_t kMachine = offsetof(Elf64_Ehdr, e_machine);
  if (head.size() < kMachine + 2) return true;
  unsigned machine = static_cast<unsigned char>(head[kMachine]) |
                     static_cast<unsigned>(static_cast<unsigned char>(head[kMachine + 1])) << 8;
  return head[EI_CLASS] != ELFCLASS64 || machine != EM_X86_64;
}

SysResult<std::vector<std::string>> ParseShebang(std::string_view head) {
  // load_script() step by step, on a zero-padded copy of its buffer.
  std::array<char, kBinprmBufSize> buf{};
  head.copy(buf.data(), std::min(head.size(), buf.size()));
  if (buf[0] != '#' || buf[1] != '!') return Errno{ENOEXEC};
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  const size_t last = buf.size() - 1;  // buf_end; the searches below include it
  auto non_blank = [&](size_t from, size_t to) -> size_t {
    for (; from <= to; ++from) {
      if (!blank(buf[from])) return from;
    }
    return std::string_view::npos;
  };
  auto terminator = [&](size_t from, size_t to) -> size_t {
    for (; from <= to; ++from) {
      if (blank(buf[from]) || buf[from] == '\0') return from;
    }
    return std::string_view::npos;
  };
  size_t end = std::string_view::npos;  // i_end: strnchr stops at a NUL
  for (size_t i = 0; i < buf.size() && buf[i] != '\0'; ++i) {
    if (buf[i] == '\n') {
      end = i;
      break;
    }
  }
  if (end == std::string_view::npos) {
    size_t first = non_blank(2, last);
    if (first == std::string_view::npos) return Errno{ENOEXEC};
    if (terminator(first, last) == std::string_view::npos) return Errno{ENOEXEC};
    end = last;
  }
  while (blank(buf[end - 1])) --end;
  size_t name = non_blank(2, end);
  if (name == std::string_view::npos || name == end) return Errno{ENOEXEC};
  size_t sep = terminator(name, end);
  size_t arg = std::string_view::npos;
  if (sep != std::string_view::npos && buf[sep] != '\0') arg = non_blank(sep, end);
  buf[end] = '\0';
  if (arg != std::string_view::npos) buf[sep] = '\0';
  std::vector<std::string> words = {std::string(buf.data() + name)};
  if (arg != std::string_view::npos) words.emplace_back(buf.data() + arg);
  return words;
}

SysResult<ExecPlan> PlanExec(SyscallContext& ctx, int dirfd, GuestAddr path, int flags,
                             const std::vector<std::string>& view_roots) {
  if (flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) return Errno{EINVAL};
  // Read once: the name resolved is the name a script's interpreter is given.
  SYS_ASSIGN_OR_RETURN(std::string name, ReadPath(ctx, path));
  SYS_ASSIGN_OR_RETURN(
      vfs::NodeRef node,
      NodeAtPath(ctx, dirfd, name, !(flags & AT_SYMLINK_NOFOLLOW), flags & AT_EMPTY_PATH));
  // The chain binfmt_script would walk, walked here in the sandbox's tree: an
  // interpreter is resolved from the cwd, needs X, and may be a script itself.
  std::vector<std::string> argv_head = {ExecFilename(dirfd, name)};
  for (int depth = 0;; ++depth) {
    SYS_ASSIGN_OR_RETURN(ExecFile file, OpenExecFile(ctx, node, view_roots));
    if (IsForeignElf(file.head)) return Errno{ENOEXEC};
    if (!IsScript(file.head)) {
      ExecPlan plan;
      plan.view_path = std::move(file.view_path);
      plan.dev = file.dev;
      plan.ino = file.ino;
      plan.in_memory = file.in_memory;
      // The lower layer is shown where the host has it.
      plan.guest_path = file.in_memory ? SandboxPath(ctx, dirfd, name) : plan.view_path;
      if (depth > 0) plan.argv_head = std::move(argv_head);
      return plan;
    }
    if (depth == kMaxScriptDepth) return Errno{ELOOP};
    SYS_ASSIGN_OR_RETURN(std::vector<std::string> words, ParseShebang(file.head));
    // argv[0] gives way to the file's name (at depth > 0 the same string: the
    // previous interpreter's), preceded by the interpreter and its argument.
    argv_head.insert(argv_head.begin(), words.begin(), words.end());
    name = words[0];
    dirfd = AT_FDCWD;
    SYS_ASSIGN_OR_RETURN(node, NodeAtPath(ctx, AT_FDCWD, name, true, false));
  }
}

}  // namespace sentry::sys
