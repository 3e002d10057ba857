// /proc files that psutil, process pools (joblib's loky), procps (ps, top,
// vmstat, free) read: natively and under sentry each must parse the same way
// and agree with what the process knows of itself (its fds, sockets, limits,
// start time, a stopped child's state).
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

std::string Read(const std::string& path) { return ReadFile(path).value_or(""); }

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// "key: value" or "key value" files (status, fdinfo, vmstat, io).
std::map<std::string, std::string> Fields(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const std::string& line : Lines(text)) {
    size_t sep = line.find_first_of(": \t");
    if (sep == std::string::npos) continue;
    size_t v = line.find_first_not_of(": \t", sep);
    out[line.substr(0, sep)] = v == std::string::npos ? "" : line.substr(v);
  }
  return out;
}

// Field n (1-based, proc(5)) of a /proc/PID/stat line.
std::string StatField(const std::string& stat, int n) {
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::vector<std::string> f = Words(stat.substr(close + 1));
  return n - 3 < static_cast<int>(f.size()) && n >= 3 ? f[n - 3] : "";
}

// Every file the suite reads is also listed (ls, os.walk, psutil's pids()).
TEST(ProcStatsTest, DirectoriesListTheFiles) {
  auto has = [](const std::string& dir, std::vector<std::string> want) {
    std::vector<std::string> names = ListDir(dir);
    for (const std::string& w : want) {
      EXPECT_NE(std::find(names.begin(), names.end(), w), names.end()) << dir << "/" << w;
    }
  };
  has("/proc/self", {"statm", "environ", "limits", "io", "smaps", "smaps_rollup", "oom_score_adj",
                     "fdinfo", "auxv", "wchan", "sched", "net", "stat", "status", "maps"});
  has("/proc", {"vmstat", "diskstats", "swaps", "interrupts", "pressure", "net", "sys"});
  has("/proc/self/net", {"tcp", "tcp6", "udp", "udp6", "unix", "dev"});
  has("/proc/pressure", {"cpu", "memory", "io"});
  has("/proc/sys/kernel/random", {"uuid", "boot_id"});
  has("/proc/sys/fs", {"file-max", "inotify"});
  has("/proc/sys/fs/inotify", {"max_user_watches"});
  has("/proc/sys/net/core", {"somaxconn"});
  has("/proc/sys/kernel", {"threads-max"});
}

TEST(ProcStatsTest, StatmIsSevenPagesCounts) {
  std::vector<std::string> f = Words(Read("/proc/self/statm"));
  ASSERT_EQ(f.size(), 7u);
  long size = std::stol(f[0]), resident = std::stol(f[1]);
  EXPECT_GT(size, 0);
  EXPECT_GT(resident, 0);
  EXPECT_LE(resident, size);
}

TEST(ProcStatsTest, OwnEnvironIsReadableAndOwned) {
  std::string env = Read("/proc/self/environ");
  EXPECT_NE(env.find("PATH="), std::string::npos);
  struct stat st = StatOrFail("/proc/self/environ");
  EXPECT_EQ(st.st_uid, getuid());
  EXPECT_EQ(st.st_mode & 07777, 0400u);
  EXPECT_EQ(StatOrFail("/proc/self/").st_uid, getuid());
}

TEST(ProcStatsTest, LimitsShowGetrlimit) {
  std::vector<std::string> lines = Lines(Read("/proc/self/limits"));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].rfind("Limit", 0), 0u) << lines[0];
  rlimit rl;
  ASSERT_SYSCALL_SUCCEEDS(getrlimit(RLIMIT_NOFILE, &rl));
  bool seen = false;
  for (const std::string& l : lines) {
    if (l.rfind("Max open files", 0) != 0) continue;
    std::vector<std::string> w = Words(l.substr(strlen("Max open files")));
    ASSERT_GE(w.size(), 2u);
    EXPECT_EQ(w[0], std::to_string(rl.rlim_cur));
    EXPECT_EQ(w[1], std::to_string(rl.rlim_max));
    seen = true;
  }
  EXPECT_TRUE(seen);
}

TEST(ProcStatsTest, IoAndRollupHaveTheirKeys) {
  auto io = Fields(Read("/proc/self/io"));
  for (const char* k : {"rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes"}) {
    EXPECT_TRUE(io.count(k)) << k;
  }
  EXPECT_GT(std::stoll(io["rchar"]), 0);
  auto rollup = Fields(Read("/proc/self/smaps_rollup"));
  for (const char* k : {"Rss", "Pss", "Private_Dirty", "Swap"}) EXPECT_TRUE(rollup.count(k)) << k;
  EXPECT_EQ(std::stoi(Read("/proc/self/oom_score_adj")), 0);
}

// A file mapped from /tmp is named by its path in maps and smaps.
TEST(ProcStatsTest, MapsNameAMappedFileByItsPath) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("mapped"), std::string(8192, 'x')));
  UniqueFd fd(open(dir.Path("mapped").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  void* m = mmap(nullptr, 8192, PROT_READ, MAP_SHARED, fd.get(), 0);
  ASSERT_NE(m, MAP_FAILED) << ErrnoString();
  char start[32];
  snprintf(start, sizeof(start), "%lx-", reinterpret_cast<unsigned long>(m));
  for (const char* file : {"/proc/self/maps", "/proc/self/smaps"}) {
    bool seen = false;
    for (const std::string& l : Lines(Read(file))) {
      if (l.rfind(start, 0) != 0) continue;
      EXPECT_EQ(Words(l).back(), dir.Path("mapped")) << file << ": " << l;
      seen = true;
    }
    EXPECT_TRUE(seen) << file;
  }
  munmap(m, 8192);
}

TEST(ProcStatsTest, AuxvHoldsThePageSize) {
  std::string auxv = Read("/proc/self/auxv");
  ASSERT_EQ(auxv.size() % 16, 0u);
  bool seen = false;
  for (size_t i = 0; i + 16 <= auxv.size(); i += 16) {
    unsigned long kv[2];
    memcpy(kv, auxv.data() + i, sizeof(kv));
    if (kv[0] == AT_PAGESZ) seen = kv[1] == getauxval(AT_PAGESZ);
  }
  EXPECT_TRUE(seen);
}

TEST(ProcStatsTest, SchedNamesThisProcess) {
  std::vector<std::string> lines = Lines(Read("/proc/self/sched"));
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[0].find("(" + std::to_string(getpid()) + ", #threads: 1)"), std::string::npos)
      << lines[0];
  EXPECT_TRUE(Fields(Read("/proc/self/sched")).count("nr_switches"));
}

// psutil's open_files(): position, access mode and inode of each fd.
TEST(ProcStatsTest, FdinfoShowsPositionFlagsAndInode) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "0123456789"));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char buf[4];
  ASSERT_EQ(read(fd.get(), buf, sizeof(buf)), 4);
  auto info = Fields(Read("/proc/self/fdinfo/" + std::to_string(fd.get())));
  EXPECT_EQ(info["pos"], "4");
  unsigned flags = std::stoul(info["flags"], nullptr, 8);
  EXPECT_EQ(flags & O_ACCMODE, static_cast<unsigned>(O_RDONLY));
  EXPECT_TRUE(flags & O_CLOEXEC);
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd.get(), &st));
  EXPECT_EQ(info["ino"], std::to_string(st.st_ino));
  auto names = ListDir("/proc/self/fdinfo");
  EXPECT_NE(std::find(names.begin(), names.end(), std::to_string(fd.get())), names.end());

  UniqueFd wr(open(dir.Path("f").c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(wr.get());
  flags = std::stoul(Fields(Read("/proc/self/fdinfo/" + std::to_string(wr.get())))["flags"],
                     nullptr, 8);
  EXPECT_EQ(flags & O_ACCMODE, static_cast<unsigned>(O_WRONLY));
  EXPECT_TRUE(flags & O_APPEND);

  UniqueFd ev(eventfd(7, EFD_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(ev.get());
  EXPECT_EQ(Fields(Read("/proc/self/fdinfo/" + std::to_string(ev.get())))["eventfd-count"], "7");

  // A /proc file opened read-only is read-only there too.
  UniqueFd pf(open("/proc/self/status", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(pf.get());
  flags = std::stoul(Fields(Read("/proc/self/fdinfo/" + std::to_string(pf.get())))["flags"],
                     nullptr, 8);
  EXPECT_EQ(flags & O_ACCMODE, static_cast<unsigned>(O_RDONLY));
  struct stat missing;
  EXPECT_SYSCALL_FAILS_WITH(stat("/proc/self/fdinfo/999999", &missing), ENOENT);
}

// The reader of its own state is running; a child stopped by SIGSTOP is
// "T (stopped)" (never a tracing stop), and sleeping again after SIGCONT.
TEST(ProcStatsTest, StatesOfSelfAndOfAStoppedChild) {
  EXPECT_EQ(Fields(Read("/proc/self/status"))["State"], "R (running)");
  EXPECT_EQ(StatField(Read("/proc/self/stat"), 3), "R");
  pid_t child = fork();
  ASSERT_SYSCALL_SUCCEEDS(child);
  if (child == 0) {
    pause();
    _exit(0);
  }
  std::string dir = "/proc/" + std::to_string(child);
  auto state = [&] { return Fields(Read(dir + "/status"))["State"]; };
  for (int i = 0; i < 200 && state() != "S (sleeping)"; ++i) usleep(5000);
  EXPECT_EQ(state(), "S (sleeping)");
  ASSERT_SYSCALL_SUCCEEDS(kill(child, SIGSTOP));
  int status;
  ASSERT_SYSCALL_SUCCEEDS(waitpid(child, &status, WUNTRACED));
  ASSERT_TRUE(WIFSTOPPED(status));
  for (int i = 0; i < 200 && state() != "T (stopped)"; ++i) usleep(5000);
  EXPECT_EQ(state(), "T (stopped)");
  EXPECT_EQ(StatField(Read(dir + "/stat"), 3), "T");
  EXPECT_EQ(Fields(Read(dir + "/status"))["TracerPid"], "0");
  ASSERT_SYSCALL_SUCCEEDS(kill(child, SIGCONT));
  for (int i = 0; i < 200 && state() != "S (sleeping)"; ++i) usleep(5000);
  EXPECT_EQ(state(), "S (sleeping)");
  EXPECT_EQ(StatField(Read(dir + "/stat"), 3), "S");
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
}

// psutil's threads(): each /proc/self/task/TID names its own thread.
TEST(ProcStatsTest, TaskEntriesAreTheThreads) {
  pid_t tid = 0;
  std::atomic<bool> done{false};
  std::thread th([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    while (!done) usleep(1000);
  });
  while (tid == 0) usleep(1000);
  std::string dir = "/proc/self/task/" + std::to_string(tid);
  EXPECT_EQ(Words(Read(dir + "/stat")).at(0), std::to_string(tid));
  auto status = Fields(Read(dir + "/status"));
  EXPECT_EQ(status["Pid"], std::to_string(tid));
  EXPECT_EQ(status["Tgid"], std::to_string(getpid()));
  auto names = ListDir("/proc/self/task");
  EXPECT_NE(std::find(names.begin(), names.end(), std::to_string(tid)), names.end());
  EXPECT_EQ(Words(Read("/proc/self/task/" + std::to_string(getpid()) + "/stat")).at(0),
            std::to_string(getpid()));
  done = true;
  th.join();
}

// ps and psutil's create_time(): btime plus the start time in clock ticks is
// when this process started; uptime is at least its age.
TEST(ProcStatsTest, StartTimeIsNowByTheBootTime) {
  long hz = sysconf(_SC_CLK_TCK);
  auto stat = Fields(Read("/proc/stat"));
  ASSERT_TRUE(stat.count("btime"));
  double start = std::stod(stat["btime"]) +
                 std::stod(StatField(Read("/proc/self/stat"), 22)) / static_cast<double>(hz);
  double now = static_cast<double>(time(nullptr));
  EXPECT_LE(start, now + 2);
  EXPECT_GE(start, now - 600);
  double uptime = std::stod(Words(Read("/proc/uptime"))[0]);
  EXPECT_GE(uptime + 1, std::stod(StatField(Read("/proc/self/stat"), 22)) / hz);
}

// procps's vmstat and free, psutil's virtual_memory(), swap_memory(),
// disk_io_counters(), cpu_times().
TEST(ProcStatsTest, SystemFilesParseAsProcpsReadsThem) {
  auto vm = Fields(Read("/proc/vmstat"));
  for (const char* k : {"nr_free_pages", "pgpgin", "pgpgout", "pswpin", "pswpout"}) {
    EXPECT_TRUE(vm.count(k)) << k;
  }
  auto mem = Fields(Read("/proc/meminfo"));
  for (const char* k : {"MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SwapTotal",
                        "SwapFree", "Active", "Inactive", "Shmem", "Slab", "SReclaimable"}) {
    EXPECT_TRUE(mem.count(k)) << k;
  }
  EXPECT_EQ(Lines(Read("/proc/swaps")).at(0).rfind("Filename", 0), 0u);
  for (const std::string& l : Lines(Read("/proc/diskstats"))) EXPECT_GE(Words(l).size(), 14u) << l;
  EXPECT_NE(Lines(Read("/proc/interrupts")).at(0).find("CPU0"), std::string::npos);
  for (const char* p : {"cpu", "memory", "io"}) {
    std::vector<std::string> lines = Lines(Read(std::string("/proc/pressure/") + p));
    ASSERT_FALSE(lines.empty()) << p;
    EXPECT_EQ(lines[0].rfind("some avg10=", 0), 0u) << p;
  }
  std::vector<std::string> cpu = Words(Lines(Read("/proc/stat")).at(0));
  ASSERT_GE(cpu.size(), 8u);
  EXPECT_EQ(cpu[0], "cpu");
}

TEST(ProcStatsTest, SysValues) {
  std::string a = Read("/proc/sys/kernel/random/uuid"), b = Read("/proc/sys/kernel/random/uuid");
  EXPECT_EQ(a.size(), 37u);
  EXPECT_NE(a, b);
  std::string boot = Read("/proc/sys/kernel/random/boot_id");
  EXPECT_EQ(boot.size(), 37u);
  EXPECT_EQ(boot, Read("/proc/sys/kernel/random/boot_id"));
  for (const char* f : {"/proc/sys/fs/file-max", "/proc/sys/fs/inotify/max_user_watches",
                        "/proc/sys/net/core/somaxconn", "/proc/sys/kernel/threads-max"}) {
    std::string v = Read(f);
    ASSERT_FALSE(v.empty()) << f;
    EXPECT_GT(std::stoll(v), 0) << f;
  }
}

// The row of this socket in /proc/net/<table>: psutil's connections()
// matches rows to fds by inode.
std::vector<std::string> RowOf(const std::string& table, ino_t ino, size_t inode_col) {
  std::string path = table[0] == '/' ? table : "/proc/net/" + table;
  for (const std::string& l : Lines(Read(path))) {
    std::vector<std::string> w = Words(l);
    if (w.size() > inode_col && w[inode_col] == std::to_string(ino)) return w;
  }
  return {};
}

TEST(ProcStatsTest, UnixSocketRowHasItsPath) {
  ScratchDir dir;
  UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(s.get());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string path = dir.Path("s.sock");
  strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_SYSCALL_SUCCEEDS(bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
  ASSERT_SYSCALL_SUCCEEDS(listen(s.get(), 1));
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(s.get(), &st));
  std::vector<std::string> row = RowOf("unix", st.st_ino, 6);
  ASSERT_EQ(row.size(), 8u);
  EXPECT_EQ(row[7], path);
  EXPECT_EQ(row[5], "01");  // SS_UNCONNECTED, listening (__SO_ACCEPTCON in Flags)
  EXPECT_EQ(row[3], "00010000");
  EXPECT_EQ(Lines(Read("/proc/self/net/unix")).at(0).rfind("Num", 0), 0u);
}

TEST(InetLoopbackTest, ProcNetTcpAndUdpListTheSocket) {
  UniqueFd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(s.get());
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_SYSCALL_SUCCEEDS(bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)));
  ASSERT_SYSCALL_SUCCEEDS(listen(s.get(), 1));
  socklen_t len = sizeof(a);
  ASSERT_SYSCALL_SUCCEEDS(getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len));
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(s.get(), &st));
  std::vector<std::string> row = RowOf("tcp", st.st_ino, 9);
  ASSERT_GE(row.size(), 10u);
  char local[32];
  snprintf(local, sizeof(local), "0100007F:%04X", ntohs(a.sin_port));
  EXPECT_EQ(row[1], local);
  EXPECT_EQ(row[3], "0A");  // TCP_LISTEN
  EXPECT_EQ(row[7], std::to_string(getuid()));
  EXPECT_EQ(RowOf("/proc/self/net/tcp", st.st_ino, 9), row);

  UniqueFd u(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(u.get());
  a.sin_port = 0;
  ASSERT_SYSCALL_SUCCEEDS(bind(u.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)));
  ASSERT_SYSCALL_SUCCEEDS(fstat(u.get(), &st));
  row = RowOf("udp", st.st_ino, 9);
  ASSERT_GE(row.size(), 10u);
  EXPECT_EQ(row[1].substr(0, 9), "0100007F:");
  bool lo = false;
  for (const std::string& l : Lines(Read("/proc/net/dev"))) lo |= Words(l).at(0) == "lo:";
  EXPECT_TRUE(lo);
}

}  // namespace
}  // namespace sentry::conformance
