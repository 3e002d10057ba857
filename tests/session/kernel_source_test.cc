// SessionKernelFile() is kernel.py as the build found it, byte for byte, and
// SessionKernelSource() the loader that carries it (kernel_source.h).
#include "sentry/session/kernel_source.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

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

}  // namespace
}  // namespace sentry
