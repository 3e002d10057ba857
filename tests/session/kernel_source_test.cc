// SessionKernelSource() is kernel.py as the build found it, byte for byte.
#include "sentry/session/kernel_source.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace sentry {
namespace {

TEST(SessionKernelSource, IsTheKernelFile) {
  std::ifstream in(KERNEL_PY, std::ios::binary);
  ASSERT_TRUE(in) << KERNEL_PY;
  std::stringstream file;
  file << in.rdbuf();
  EXPECT_EQ(SessionKernelSource(), file.str());
  EXPECT_EQ(SessionKernelSource().find('\0'), std::string_view::npos);
  EXPECT_NE(SessionKernelSource().find("def _start():"), std::string_view::npos);
}

}  // namespace
}  // namespace sentry
