// libFuzzer target: the syscall argument decoders and readers of guest memory.
//
// Each input is a guest address space and up to four trapped syscalls made
// in it. The address space is a fake (GuestMemory's MemoryBackend): three
// pages of fuzzed bytes at kData, an unmapped page after them (so strings and
// structs run into a fault), and a zeroed page at kOut for results. Each
// argument is picked by the input: a pointer into the fuzzed pages (or just
// before the hole), AT_FDCWD, a small number, a guest fd, or raw bits.
//
// Half the calls take arguments shaped by the row's argument kinds (an fd
// that exists, a pointer into the fuzzed pages, a small length), so that
// handlers are reached past their first check. For each call the target
// runs, as the dispatcher does:
//  - Dispatcher::Describe, the --trace decoder, on any syscall number
//    (paths, open flags, sockaddrs of every family and length);
//  - the row's handler, for every trapped row but sched_setaffinity (which
//    would act on a host task): path reading (ReadPath), *at() dirfds, open
//    flags and modes, stat/statx buffers, xattr names and values, utimes
//    arrays, getdents64 buffers, groups arrays, and the sockaddr readers of
//    connect, bind and sendto (ReadSockAddr, the unix path of an address)
//    against a fresh Vfs over a lower directory on the host.
// The guest's fds: what the handlers donated (3, 4, ...), and at 100 and 101
// a unix datagram and a unix stream socket of this process; nothing else
// exists (EBADF). The kernel is one without namespaces, so abstract unix
// names are refused rather than reached in the host's network namespace,
// and no handler can reach a network: the only sockets are unix ones.
//
// Checked beyond "no crash": the host's lower directory never changes, and a
// result is a value or an errno in 1..4095.
#include <fcntl.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "sentry/kernel/dispatcher.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/syscall_context.h"
#include "sentry/trace/syscall_format.h"
#include "syscalls/table.h"

namespace sentry {
namespace {

constexpr uint64_t kPage = GuestMemory::kPageSize;
constexpr uint64_t kData = 0x7f0000010000;  // three fuzzed pages, then a hole
constexpr uint64_t kDataLen = 3 * kPage;
constexpr uint64_t kOut = 0x7f0000020000;  // a zeroed page for results
constexpr int kDgramFd = 100, kStreamFd = 101;

std::string g_host_dir, g_lower_dir, g_store_dir, g_lower_snapshot;
ino_t g_netns_ino = 0;
std::vector<const SyscallRow*> g_trapped;

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz_syscall_args invariant broken: %s %s\n", what, detail.c_str());
  std::abort();
}

// Mapped regions; a copy that runs past one's end comes back short there, as
// process_vm_readv/writev do (the regions are not adjacent).
class FakeMemory final : public MemoryBackend {
 public:
  void Map(uint64_t addr, std::vector<uint8_t> bytes) { pages_[addr] = std::move(bytes); }
  ssize_t ReadChunk(uint64_t addr, void* out, size_t len) override {
    size_t n = len;
    uint8_t* p = At(addr, n);
    if (!p) return -EFAULT;
    std::memcpy(out, p, n);
    return static_cast<ssize_t>(n);
  }
  ssize_t WriteChunk(uint64_t addr, const void* in, size_t len) override {
    size_t n = len;
    uint8_t* p = At(addr, n);
    if (!p) return -EFAULT;
    std::memcpy(p, in, n);
    return static_cast<ssize_t>(n);
  }

 private:
  // The bytes at addr, len cut to what the region holds from there.
  uint8_t* At(uint64_t addr, size_t& len) {
    for (auto& [base, bytes] : pages_) {
      if (addr < base || addr - base >= bytes.size()) continue;
      len = std::min<size_t>(len, bytes.size() - (addr - base));
      return bytes.data() + (addr - base);
    }
    return nullptr;
  }
  std::map<uint64_t, std::vector<uint8_t>> pages_;
};

// The guest's fd table: donated fds from 3 up, two unix sockets at 100, 101.
class FakeFds final : public GuestFds {
 public:
  FakeFds() {
    sockets_[kDgramFd] = UniqueFd(socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    sockets_[kStreamFd] = UniqueFd(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  }
  SysResult<UniqueFd> Get(int guest_fd) override {
    int fd = -1;
    if (auto it = sockets_.find(guest_fd); it != sockets_.end()) fd = it->second.get();
    if (guest_fd >= 3 && static_cast<size_t>(guest_fd - 3) < donated_.size()) {
      fd = donated_[guest_fd - 3].get();
    }
    if (fd < 0) return Errno{EBADF};
    return UniqueFd(fcntl(fd, F_DUPFD_CLOEXEC, 0));
  }
  SysResult<int> Install(int host_fd, bool cloexec) override {
    if (donated_.size() >= 16) return Errno{EMFILE};
    donated_.emplace_back(fcntl(host_fd, F_DUPFD_CLOEXEC, 0));
    return static_cast<int>(donated_.size() + 2);
  }
  int count() const { return static_cast<int>(donated_.size()); }

 private:
  std::map<int, UniqueFd> sockets_;
  std::vector<UniqueFd> donated_;
};

std::string Snapshot() {
  std::string out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(g_lower_dir, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st;
    if (lstat(it->path().c_str(), &st) != 0) continue;
    out += it->path().string() + " " + std::to_string(st.st_mode) + " " +
           std::to_string(st.st_uid) + " " + std::to_string(st.st_size) + " " +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + "\n";
  }
  return out;
}

// A new directory under $TMPDIR (run.sh sets one per target and removes it
// afterwards: libFuzzer ends a timed run without running atexit handlers).
std::string TempDir(const char* tag) {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/sentry-fuzz-" + tag + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) Fail("mkdtemp", tmpl);
  return tmpl;
}

void Setup() {
  g_host_dir = TempDir("args");
  g_lower_dir = g_host_dir + "/lower";
  std::string l = g_lower_dir + "/";
  mkdir(g_lower_dir.c_str(), 0755);
  std::ofstream(l + "hello.txt") << "host data\n";
  mkdir((l + "dir").c_str(), 0755);
  std::ofstream(l + "dir/inner.txt") << "inner\n";
  symlink("hello.txt", (l + "link").c_str());
  symlink("/etc/passwd", (l + "abs").c_str());
  symlink("../../..", (l + "up").c_str());
  g_store_dir = TempDir("args-store");
  g_lower_snapshot = Snapshot();
  struct stat st;
  if (stat("/proc/self/ns/net", &st) == 0) g_netns_ino = st.st_ino;
  for (const SyscallRow& row : SyscallTable()) {
    if (row.action != Action::kTrap || !row.handler) continue;
    if (std::strcmp(row.name, "sched_setaffinity") == 0) continue;  // a host task's CPUs
    g_trapped.push_back(&row);
  }
}

void ClearStore() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(g_store_dir, ec)) {
    std::filesystem::remove_all(e.path(), ec);
  }
}

std::unique_ptr<vfs::Vfs> MakeVfs() {
  using namespace vfs;
  int store_fd = open(g_store_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  auto store = std::make_unique<Store>(UniqueFd(store_fd), getuid(), getgid());
  store->set_exec_dir(g_store_dir);
  Attr root_attr;
  root_attr.mode = S_IFDIR | 0755;
  root_attr.ino = 2;
  auto root = std::make_shared<Node>(NodeKind::kDir, root_attr);
  auto v = std::make_unique<Vfs>(root, std::move(store));
  v->AddChild(root, "tmp", v->NewNode(NodeKind::kDir, S_IFDIR | 01777, 0, 0));
  int host_fd = open(g_host_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  auto host = std::make_shared<HostDir>(HostDir{UniqueFd(host_fd), g_host_dir});
  struct stat st;
  if (fstatat(host_fd, "lower", &st, AT_SYMLINK_NOFOLLOW) != 0) Fail("lower dir gone");
  NodeRef lower = v->MakeLowerNode(host, "lower", st);
  if (!lower) Fail("no lower node");
  v->AddChild(root, "lower", lower);
  v->set_metadata_limit(1 << 20);
  return v;
}

uint64_t Arg(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 7)) {
    case 0:
    case 1:
      return kData + in.ConsumeIntegralInRange<uint64_t>(0, kDataLen - 1);
    case 2:  // close to the hole: a struct or string that runs into a fault
      return kData + kDataLen - in.ConsumeIntegralInRange<uint64_t>(1, 300);
    case 3:
      return kOut + in.ConsumeIntegralInRange<uint64_t>(0, kPage - 1);
    case 4:
      return static_cast<uint64_t>(static_cast<int64_t>(AT_FDCWD));
    case 5:
      return in.ConsumeIntegralInRange<uint64_t>(0, 300);
    case 6:
      return in.PickValueInArray({3, 4, 5, kDgramFd, kStreamFd});
    default:
      return in.ConsumeIntegral<uint64_t>();
  }
}

// An argument shaped by its kind in the table (SyscallRow::args), so the
// fuzzer reaches past the first check of a handler: an fd that exists, a
// pointer to fuzzed memory, a length a struct fits in.
uint64_t ArgOfKind(FuzzedDataProvider& in, char kind) {
  switch (kind) {
    case 'f':
      return in.PickValueInArray<uint64_t>(
          {static_cast<uint64_t>(static_cast<int64_t>(AT_FDCWD)), 3, 4, kDgramFd, kStreamFd});
    case 's':  // kinds that point at guest memory (table.h lists them)
    case 'p':
    case 'A':
    case 'M':
    case 'V':
    case 'C':
    case 'q':
      return in.ConsumeBool() ? kData + in.ConsumeIntegralInRange<uint64_t>(0, 512)
                              : kData + kDataLen - in.ConsumeIntegralInRange<uint64_t>(1, 300);
    case 'l':
      return in.ConsumeIntegralInRange<uint64_t>(0, 300);
    default:
      return in.ConsumeIntegral<uint32_t>();
  }
}

struct Call {
  int nr;
  SyscallArgs args;
};

void RunOne(FuzzedDataProvider& in) {
  // The calls first (FuzzedDataProvider takes numbers from the input's end),
  // then the guest's memory: the rest of the input, from its start.
  bool root = in.ConsumeBool();
  std::vector<Call> calls;
  int ncalls = in.ConsumeIntegralInRange(1, 4);
  for (int i = 0; i < ncalls && in.remaining_bytes() > 0; ++i) {
    Call c;
    c.nr = in.ConsumeBool()
               ? in.ConsumeIntegralInRange(-1, 600)
               : g_trapped[in.ConsumeIntegralInRange<size_t>(0, g_trapped.size() - 1)]->nr;
    const SyscallRow* row = FindSyscall(c.nr);
    if (row && in.ConsumeBool()) {
      for (int k = 0; k < 6; ++k) {
        c.args.raw[k] =
            k < static_cast<int>(std::strlen(row->args)) ? ArgOfKind(in, row->args[k]) : Arg(in);
      }
    } else {
      for (uint64_t& a : c.args.raw) a = Arg(in);
    }
    calls.push_back(c);
  }
  FakeMemory mem_backend;
  std::vector<uint8_t> data = in.ConsumeBytes<uint8_t>(kDataLen);
  data.resize(kDataLen, 0);
  mem_backend.Map(kData, std::move(data));
  mem_backend.Map(kOut, std::vector<uint8_t>(kPage, 0));
  GuestMemory mem(mem_backend);

  KernelConfig config;
  config.namespaces = false;  // abstract unix names are the host's: refused
  config.net_ns_ino = g_netns_ino;
  Kernel kernel(MakeVfs(), config);
  Task task;
  // This process itself: a handler that signals its caller (sendto's
  // SIGPIPE, ignored here) or asks about its CPUs reaches no other task.
  task.tid = static_cast<pid_t>(gettid());
  task.ns_tid = 1;
  task.fs = std::make_shared<FsContext>();
  task.fs->cwd = kernel.vfs().root();
  task.process = std::make_shared<Process>();
  task.process->tgid = getpid();
  task.process->ns_pid = 1;
  task.process->creds = root ? vfs::Creds{0, 0, {}} : vfs::Creds{1000, 1000, {}};
  FakeFds fds;

  for (const Call& c : calls) {
    SyscallContext ctx{kernel, task, mem, fds, c.args, {}, {}};
    (void)Dispatcher::Describe(ctx, c.nr);
    // What a call writes, as --trace decodes it once the call returned (any
    // number: a census prints native calls too), with a made-up result.
    trace::TracedCall done{c.nr};
    std::copy(std::begin(c.args.raw), std::end(c.args.raw), done.args);
    done.done = true;
    done.ret = static_cast<int64_t>(c.args.raw[5] & 0xffff);
    (void)trace::FormatCall(done, &mem);
    (void)trace::FormatReturn(done);
    const SyscallRow* row = FindSyscall(c.nr);
    if (!row || row->action != Action::kTrap || !row->handler) continue;
    if (std::strcmp(row->name, "sched_setaffinity") == 0) continue;
    SysResult<uint64_t> r = row->handler(ctx);
    if (!r.ok() && (r.error() <= 0 || r.error() >= 4096)) Fail("errno out of range", row->name);
    done.ret = r.ok() ? static_cast<int64_t>(*r) : -r.error();
    (void)trace::FormatCall(done, &mem);
  }
}

}  // namespace
}  // namespace sentry

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  signal(SIGPIPE, SIG_IGN);
  sentry::Setup();
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(sentry::g_host_dir, ec);
    std::filesystem::remove_all(sentry::g_store_dir, ec);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sentry::ClearStore();
  FuzzedDataProvider in(data, size);
  sentry::RunOne(in);
  if (sentry::Snapshot() != sentry::g_lower_snapshot)
    sentry::Fail("the host's lower directory changed");
  return 0;
}
