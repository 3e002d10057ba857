// The --trace printer on its own: flag names, quoting, structs read from a
// fake guest memory (with an unmapped page to fault on), return values and the
// writer's layout, each against what strace prints.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "sentry/trace/syscall_format.h"
#include "sentry/trace/trace_flags.h"
#include "sentry/trace/trace_structs.h"
#include "sentry/trace/trace_writer.h"

namespace sentry::trace {
namespace {

// Two readable pages at kBase; everything else faults.
constexpr uint64_t kBase = 0x10000;
class FakeMemory final : public MemoryBackend {
 public:
  FakeMemory() : bytes_(2 * GuestMemory::kPageSize, '\0') {}
  ssize_t ReadChunk(uint64_t addr, void* out, size_t len) override {
    if (addr < kBase || addr + len > kBase + bytes_.size()) return -EFAULT;
    std::memcpy(out, bytes_.data() + (addr - kBase), len);
    return static_cast<ssize_t>(len);
  }
  ssize_t WriteChunk(uint64_t, const void*, size_t) override { return -EFAULT; }
  // Places data at kBase + off; returns its guest address.
  uint64_t Put(size_t off, const void* data, size_t len) {
    std::memcpy(bytes_.data() + off, data, len);
    return kBase + off;
  }
  uint64_t PutStr(size_t off, const std::string& s) { return Put(off, s.c_str(), s.size() + 1); }
  uint64_t End() const { return kBase + bytes_.size(); }

 private:
  std::string bytes_;
};

TracedCall Done(int nr, std::initializer_list<uint64_t> args, int64_t ret) {
  TracedCall c{nr};
  int i = 0;
  for (uint64_t a : args) c.args[i++] = a;
  c.done = true;
  c.ret = ret;
  return c;
}

TEST(TraceFlagsTest, NamesAsStracePrintsThem) {
  EXPECT_EQ(OpenFlags(O_RDONLY | O_CLOEXEC), "O_RDONLY|O_CLOEXEC");
  EXPECT_EQ(OpenFlags(O_WRONLY | O_CREAT | O_TRUNC), "O_WRONLY|O_CREAT|O_TRUNC");
  EXPECT_EQ(OpenFlags(O_RDWR | O_TMPFILE), "O_RDWR|O_TMPFILE");
  EXPECT_EQ(OpenFlags(0100002), "O_RDWR|O_LARGEFILE");
  EXPECT_EQ(OpenFlags(O_RDONLY | 0x40000000), "O_RDONLY|0x40000000");
  EXPECT_EQ(AtFlags(0), "0");
  EXPECT_EQ(AtFlags(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW), "AT_SYMLINK_NOFOLLOW|AT_EMPTY_PATH");
  EXPECT_EQ(AccessMode(0), "F_OK");
  EXPECT_EQ(AccessMode(R_OK | W_OK), "R_OK|W_OK");
  EXPECT_EQ(Dirfd(static_cast<uint32_t>(AT_FDCWD)), "AT_FDCWD");
  EXPECT_EQ(ProtFlags(0), "PROT_NONE");
  EXPECT_EQ(MapFlags(MAP_PRIVATE | MAP_ANONYMOUS), "MAP_PRIVATE|MAP_ANONYMOUS");
  EXPECT_EQ(SockType(SOCK_STREAM | SOCK_CLOEXEC), "SOCK_STREAM|SOCK_CLOEXEC");
  EXPECT_EQ(Family(AF_INET6), "AF_INET6");
  EXPECT_EQ(CloneFlags(0x01200000 | SIGCHLD), "CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD");
  EXPECT_EQ(CloneFlags(SIGCHLD), "SIGCHLD");
  EXPECT_EQ(FcntlCmd(F_DUPFD_CLOEXEC), "F_DUPFD_CLOEXEC");
  EXPECT_EQ(IoctlCmd(0x5401), "TCGETS");
  EXPECT_EQ(FileMode(S_IFDIR | S_ISVTX | 0777), "S_IFDIR|S_ISVTX|0777");
  EXPECT_EQ(FileMode(S_IFREG | 0644), "S_IFREG|0644");
  EXPECT_EQ(PermMode(0), "000");
  EXPECT_EQ(PermMode(022), "022");
  EXPECT_EQ(SignalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(SignalName(33), "SIGRT_1");
  EXPECT_EQ(SigSet(0, 8), "[]");
  EXPECT_EQ(SigSet((1u << (SIGINT - 1)) | (1u << (SIGQUIT - 1)), 8), "[INT QUIT]");
  EXPECT_EQ(SigSet(~uint64_t{0} & ~(uint64_t{3} << 31), 8), "~[RTMIN RT_1]");
  EXPECT_EQ(SigSet(~uint64_t{0}, 8), "~[]");
  EXPECT_EQ(FutexOp(9 | 128 | 256), "FUTEX_WAIT_BITSET_PRIVATE|FUTEX_CLOCK_REALTIME");
  EXPECT_EQ(ErrnoName(ENOENT), "ENOENT");
}

TEST(TraceStructsTest, QuotesAsStrace) {
  EXPECT_EQ(Quote(std::string("\177ELF\2\1\1\3\0\0", 10)), R"("\177ELF\2\1\1\3\0\0")");
  EXPECT_EQ(Quote(std::string("\0"
                              "1",
                              2)),
            R"("\0001")");  // an octal digit follows
  EXPECT_EQ(Quote("a\"b\\c\n\t\r\v\f"), R"("a\"b\\c\n\t\r\v\f")");
  EXPECT_EQ(Quote("\x10t"), R"("\20t")");
  EXPECT_EQ(Quote("x", true), R"("x"...)");
}

TEST(TraceStructsTest, ReadsBoundedAndShowsFaultsAsAddresses) {
  FakeMemory fake;
  GuestMemory mem(fake);
  EXPECT_EQ(Path(&mem, fake.PutStr(0, "/etc/passwd")), R"("/etc/passwd")");
  EXPECT_EQ(Path(&mem, 0), "NULL");
  EXPECT_EQ(Path(&mem, 0xdead0000), "0xdead0000");
  EXPECT_EQ(Path(nullptr, 0x1234), "0x1234");
  // A string running into the unmapped page: its address, never a crash.
  std::string tail(16, 'z');
  uint64_t at = fake.Put(2 * GuestMemory::kPageSize - tail.size(), tail.data(), tail.size());
  EXPECT_EQ(Path(&mem, at), absl::StrFormat("%#x", at));
  // Clipped at 32 bytes with "...", as strace -s 32.
  uint64_t longs = fake.PutStr(100, std::string(40, 'a'));
  EXPECT_EQ(CString(&mem, longs), "\"" + std::string(32, 'a') + "\"...");
  EXPECT_EQ(Buffer(&mem, longs, 5), R"("aaaaa")");
  EXPECT_EQ(Buffer(&mem, longs, 40), "\"" + std::string(32, 'a') + "\"...");
  EXPECT_EQ(Buffer(&mem, fake.End() - 4, 40), absl::StrFormat("%#x", fake.End() - 4));

  uint64_t a0 = fake.PutStr(200, "sh"), a1 = fake.PutStr(210, "-c");
  uint64_t argv[] = {a0, a1, 0};
  uint64_t argv_at = fake.Put(256, argv, sizeof(argv));
  EXPECT_EQ(StringArray(&mem, argv_at), R"(["sh", "-c"])");
  EXPECT_EQ(EnvArray(&mem, argv_at), absl::StrFormat("%#x /* 2 vars */", argv_at));
  uint64_t many[40];
  for (auto& p : many) p = a0;
  uint64_t many_at = fake.Put(512, many, sizeof(many));  // no NULL: runs into zeros later
  EXPECT_NE(StringArray(&mem, many_at).find(", ...]"), std::string::npos);

  struct stat st {};
  st.st_mode = S_IFCHR | 0666;
  st.st_rdev = makedev(1, 3);
  EXPECT_EQ(Stat(&mem, fake.Put(1024, &st, sizeof(st))),
            "{st_mode=S_IFCHR|0666, st_rdev=makedev(0x1, 0x3), ...}");

  sockaddr_un un{AF_UNIX, ""};
  std::memcpy(un.sun_path, "\0abstract", 9);
  EXPECT_EQ(SockAddr(&mem, fake.Put(1536, &un, sizeof(un)), 2 + 9),
            R"({sa_family=AF_UNIX, sun_path=@"abstract"})");
  EXPECT_EQ(SockAddr(&mem, fake.Put(1536, &un, sizeof(un)), 1),
            absl::StrFormat("%#x", kBase + 1536));
}

TEST(TraceFormatTest, CallsAndResults) {
  FakeMemory fake;
  GuestMemory mem(fake);
  uint64_t path = fake.PutStr(0, "/nope");
  TracedCall failed = Done(SYS_openat, {static_cast<uint32_t>(AT_FDCWD), path, O_RDONLY}, -ENOENT);
  EXPECT_EQ(FormatCall(failed, &mem), R"(openat(AT_FDCWD, "/nope", O_RDONLY))");
  EXPECT_EQ(FormatReturn(failed), "-1 ENOENT (No such file or directory)");
  TracedCall creat =
      Done(SYS_openat, {static_cast<uint32_t>(AT_FDCWD), path, O_WRONLY | O_CREAT, 0644}, 3);
  EXPECT_EQ(FormatCall(creat, &mem), R"(openat(AT_FDCWD, "/nope", O_WRONLY|O_CREAT, 0644))");
  // What a call writes is shown only once it succeeded.
  struct stat st {};
  st.st_mode = S_IFREG | 0600;
  st.st_size = 5;
  uint64_t buf = fake.Put(512, &st, sizeof(st));
  EXPECT_EQ(FormatCall(Done(SYS_fstat, {3, buf}, 0), &mem),
            "fstat(3, {st_mode=S_IFREG|0600, st_size=5, ...})");
  EXPECT_EQ(FormatCall(Done(SYS_fstat, {3, buf}, -EBADF), &mem),
            absl::StrFormat("fstat(3, %#x)", buf));
  EXPECT_EQ(FormatReturn(Done(SYS_mmap, {}, 0x7f0000001000)), "0x7f0000001000");
  EXPECT_EQ(FormatReturn(Done(SYS_umask, {}, 022)), "022");
  EXPECT_EQ(FormatReturn(Done(SYS_fcntl, {3, F_GETFL}, 0100002)),
            "0x8002 (flags O_RDWR|O_LARGEFILE)");
  EXPECT_EQ(FormatReturn(Done(SYS_exit_group, {0}, 0)), "?");
  EXPECT_EQ(FormatCall(Done(SYS_mmap,
                            {0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                             static_cast<uint32_t>(-1), 0},
                            0x7f0000001000),
                       &mem),
            "mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0)");
  EXPECT_EQ(FormatCall(Done(SYS_kill, {2, SIGTERM}, 0), nullptr), "kill(2, SIGTERM)");
  EXPECT_EQ(SyscallName(999), "syscall_0x3e7");
}

TEST(TraceWriterTest, StraceLayout) {
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  {
    TraceWriter w(f);
    w.Call(2, "close(3)", "0");
    w.TaskStarted();
    w.Call(3, R"(access("/a-rather-long-path/for-the-column", F_OK))", "0");
    w.Unfinished(3, "connect", "3, {sa_family=AF_INET}, 16");
    w.Resumed(3, "connect", "0");
    w.Event(3, "+++ exited with 0 +++");
    w.TaskEnded();
    w.Event(2, "+++ exited with 1 +++");
  }
  std::fclose(f);
  EXPECT_EQ(std::string(text, size),
            "close(3)                                = 0\n"
            "[pid     3] access(\"/a-rather-long-path/for-the-column\", F_OK) = 0\n"
            "[pid     3] connect(3, {sa_family=AF_INET}, 16 <unfinished ...>\n"
            "[pid     3] <... connect resumed>)      = 0\n"
            "[pid     3] +++ exited with 0 +++\n"
            "+++ exited with 1 +++\n");
  std::free(text);
}

}  // namespace
}  // namespace sentry::trace
