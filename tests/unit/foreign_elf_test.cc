// IsForeignElf: which ELF images exec planning refuses with ENOEXEC (and the
// tracer recognises at an exec event), by their first bytes.
#include <elf.h>

#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "syscalls/sys_exec.h"

namespace sentry::sys {
namespace {

std::string Header(unsigned char klass, uint16_t machine) {
  Elf64_Ehdr h{};
  std::memcpy(h.e_ident, ELFMAG, SELFMAG);
  h.e_ident[EI_CLASS] = klass;
  h.e_ident[EI_DATA] = ELFDATA2LSB;
  h.e_ident[EI_VERSION] = EV_CURRENT;
  h.e_type = ET_EXEC;
  h.e_machine = machine;  // at the same offset in Elf32_Ehdr
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h));
}

TEST(ForeignElfTest, OnlyX86_64ImagesRun) {
  EXPECT_FALSE(IsForeignElf(Header(ELFCLASS64, EM_X86_64)));
  EXPECT_TRUE(IsForeignElf(Header(ELFCLASS32, EM_386)));     // i386
  EXPECT_TRUE(IsForeignElf(Header(ELFCLASS32, EM_X86_64)));  // x32
  EXPECT_TRUE(IsForeignElf(Header(ELFCLASS64, EM_AARCH64)));
  EXPECT_TRUE(IsForeignElf(Header(ELFCLASS64, EM_X86_64).substr(0, 10)));  // cut short
}

TEST(ForeignElfTest, ScriptsAndOtherFilesAreNotElf) {
  EXPECT_FALSE(IsForeignElf("#!/bin/sh\n"));
  EXPECT_FALSE(IsForeignElf(""));
  EXPECT_FALSE(
      IsForeignElf("\x7f"
                   "EL"));
}

}  // namespace
}  // namespace sentry::sys
