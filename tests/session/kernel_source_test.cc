// SessionKernelFile() is kernel.py as the build found it, byte for byte, and
// SessionKernelSource() the loader that carries it (kernel_source.h); the
// numbers its fork op shares with the sentry are the sentry's.
#include "sentry/session/kernel_source.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "syscalls/fork_gate.h"

namespace sentry {
namespace {

TEST(SessionKernelSource, IsTheKernelFile) {
  std::ifstream in(KERNEL_PY, std::ios::binary);
  ASSERT_TRUE(in) << KERNEL_PY;
  std::stringstream file;
  file << in.rdbuf();
  EXPECT_EQ(SessionKernelFile(), file.str());
  EXPECT_NE(SessionKernelFile().find("def _start():"), std::string_view::npos);
  std::string_view program = SessionKernelSource();
  EXPECT_NE(program.find(absl::Base64Escape(file.str())), std::string_view::npos);
  EXPECT_EQ(program.find('\0'), std::string_view::npos);
  // One argv string may hold 128 KiB (MAX_ARG_STRLEN).
  EXPECT_LT(program.size(), 128u << 10);
}

// The number after "\nNAME = " in kernel.py (decimal, or hex after 0x).
uint64_t KernelConstant(const std::string& name) {
  std::string file(SessionKernelFile());
  std::string key = "\n" + name + " = ";
  size_t at = file.find(key);
  if (at == std::string::npos) {
    ADD_FAILURE() << name << " is not in kernel.py";
    return 0;
  }
  std::string rest = file.substr(at + key.size());
  rest = rest.substr(0, rest.find_first_of(" \n"));
  size_t used = 0;
  uint64_t value = std::stoull(rest, &used, 0);
  EXPECT_EQ(used, rest.size()) << name << " = " << rest;
  return value;
}

// kernel.py's fork op (FORK.md, step 6) clones with the flags the fork gate
// lets run (the one source is syscalls/fork_gate.h) and re-listens with a
// program buffer of BPF_MAXINSNS, which BeginRelisten writes over.
TEST(SessionKernelSource, TheForkOpUsesTheSentrysNumbers) {
  EXPECT_EQ(KernelConstant("FORK_CLONE_FLAGS"), kForkCloneFlags);
  EXPECT_TRUE(IsForkClone(KernelConstant("SYS_CLONE"), KernelConstant("FORK_CLONE_FLAGS")));
  EXPECT_EQ(KernelConstant("BPF_MAXINSNS"), static_cast<uint64_t>(BPF_MAXINSNS));
  EXPECT_EQ(KernelConstant("SYS_CLONE"), static_cast<uint64_t>(SYS_clone));
  EXPECT_EQ(KernelConstant("SYS_SECCOMP"), static_cast<uint64_t>(SYS_seccomp));
  EXPECT_EQ(KernelConstant("SECCOMP_SET_MODE_FILTER"),
            static_cast<uint64_t>(SECCOMP_SET_MODE_FILTER));
  uint64_t listener = KernelConstant("SECCOMP_FILTER_FLAG_NEW_LISTENER");
  EXPECT_EQ(listener, static_cast<uint64_t>(SECCOMP_FILTER_FLAG_NEW_LISTENER));
  EXPECT_TRUE(IsListenerRequest(KernelConstant("SYS_SECCOMP"), listener));
}

}  // namespace
}  // namespace sentry
