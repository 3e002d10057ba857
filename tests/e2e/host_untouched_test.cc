// A guest that is root inside the sandbox changes the host's files only in its
// own memory: the host keeps them, and the next run sees the originals.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

size_t CountEntries(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

mode_t HostMode(const std::string& path) {
  struct stat st {};
  stat(path.c_str(), &st);
  return st.st_mode & 07777;
}

std::string Octal(mode_t mode) {
  char buf[16];
  snprintf(buf, sizeof(buf), "%o", mode);
  return buf;
}

// What a fresh run sees of the files the tests below change.
std::string FreshView() {
  ProcessResult r = RunSentry({"--root"}, {"/bin/sh", "-c",
                                           "cat /etc/hostname; stat -L -c %a /bin/sh; "
                                           "ls /usr/bin | wc -l; ls /usr/bin/sentry-was-here"});
  return r.out + r.err;
}

TEST(HostUntouchedTest, WritingEtcHostname) {
  std::string before = ReadHostFile("/etc/hostname");
  ProcessResult r =
      RunSentry({"--root"}, {"/usr/bin/python3", "-c",
                             "import os\n"
                             "try:\n"
                             "    open('/etc/hostname', 'w').write('pwned\\n')\n"
                             "    print('inside', open('/etc/hostname').read().strip())\n"
                             "except OSError as e:\n"
                             "    print('failed', e.errno)\n"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(ReadHostFile("/etc/hostname"), before);
  EXPECT_EQ(FreshView().substr(0, 8), "sandbox\n");
  EXPECT_EQ(r.out, "inside pwned\n");
}

TEST(HostUntouchedTest, RemovingUsrBin) {
  size_t before = CountEntries("/usr/bin");
  ProcessResult r =
      RunSentry({"--root"}, {"/bin/sh", "-c",
                             "rm -rf /usr/bin; echo rm=$?; if [ -e /usr/bin ]; then echo present; "
                             "else echo gone; fi"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "rm=0\ngone\n") << r.err;
  EXPECT_TRUE(std::filesystem::exists("/usr/bin/python3"));
  EXPECT_EQ(CountEntries("/usr/bin"), before);
  std::string fresh = FreshView();
  EXPECT_NE(fresh.find("\n" + std::to_string(before) + "\n"), std::string::npos) << fresh;
}

TEST(HostUntouchedTest, ChmodOfBinSh) {
  mode_t before = HostMode("/bin/sh");
  ProcessResult r =
      RunSentry({"--root"}, {"/bin/sh", "-c", "chmod 777 /bin/sh && stat -L -c %a /bin/sh"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "777\n");
  EXPECT_EQ(HostMode("/bin/sh"), before);
  std::string fresh = FreshView();
  EXPECT_NE(fresh.find("\n" + Octal(before) + "\n"), std::string::npos) << fresh;
}

TEST(HostUntouchedTest, CreatingAndEditingSystemFiles) {
  ProcessResult r = RunSentry(
      {"--root"},
      {"/bin/sh", "-c",
       "echo new > /usr/bin/sentry-was-here && cat /usr/bin/sentry-was-here && "
       "echo appended >> /usr/lib/os-release && tail -n 1 /usr/lib/os-release && "
       "mv /usr/lib/os-release /usr/lib/os-release.moved && ls /usr/lib/os-release.moved"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "new\nappended\n/usr/lib/os-release.moved\n");
  EXPECT_FALSE(std::filesystem::exists("/usr/bin/sentry-was-here"));
  EXPECT_FALSE(std::filesystem::exists("/usr/lib/os-release.moved"));
  EXPECT_EQ(ReadHostFile("/usr/lib/os-release").find("appended"), std::string::npos);
  EXPECT_NE(FreshView().find("No such file"), std::string::npos);
}

TEST(HostUntouchedTest, UnprivilegedGuestCannotWriteSystemDirs) {
  ProcessResult r =
      RunSentry({}, {"/usr/bin/python3", "-c",
                     "import os\n"
                     "for p in ['/usr/bin/x', '/etc/hostname', '/usr/lib/os-release', '/x']:\n"
                     "    try:\n"
                     "        open(p, 'a').close(); print(p, 'written')\n"
                     "    except OSError as e:\n"
                     "        print(p, e.errno)\n"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "/usr/bin/x 13\n/etc/hostname 13\n/usr/lib/os-release 13\n/x 13\n");
}

}  // namespace
}  // namespace sentry::testing
