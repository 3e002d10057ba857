// The VFS copy of a session fork (vfs/vfs_snapshot.h), the part of a fork
// that scales with the disk written: a tree of 1,000 small files, and one
// 100 MB file, written to a unix socket by one thread and read into a fresh
// Vfs by another, each store on tmpfs (/dev/shm) as a sandbox's is.
// Counters: stream bytes per copy, their rate, and the writer thread's CPU
// (the CPU column is the reader's, S2's side).
#include "vfs/vfs_snapshot.h"

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

namespace sentry::vfs {
namespace {

struct Tree {
  std::string store_dir;
  std::unique_ptr<Vfs> vfs;
  Tree() {
    char tmpl[] = "/dev/shm/sentry-bench-store-XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    store_dir = tmpl;
    auto store = std::make_unique<Store>(UniqueFd(open(tmpl, O_PATH | O_DIRECTORY | O_CLOEXEC)),
                                         getuid(), getgid());
    Attr a;
    a.mode = S_IFDIR | 0755;
    a.ino = 2;
    auto root = std::make_shared<Node>(NodeKind::kDir, a);
    vfs = std::make_unique<Vfs>(root, std::move(store));
    vfs->AddChild(root, "tmp", vfs->NewNode(NodeKind::kDir, S_IFDIR | 01777, 0, 0));
  }
  ~Tree() {
    vfs.reset();
    std::error_code ec;
    std::filesystem::remove_all(store_dir, ec);
  }
  void AddFile(const std::string& dir, const std::string& name, const std::string& data) {
    Creds root;
    root.uid = root.gid = 0;
    auto at = vfs->Walk(vfs->root(), dir + "/" + name, {}, root);
    auto node = vfs->Create(*at, NodeKind::kFile, 0644, root);
    auto fd = vfs->OpenData(**node, O_WRONLY);
    for (size_t off = 0; off < data.size();) {
      ssize_t n = write(fd->get(), data.data() + off, data.size() - off);
      if (n <= 0) std::abort();
      off += static_cast<size_t>(n);
    }
  }
};

void CopyOnce(benchmark::State& state, Tree& parent, uint64_t* bytes) {
  state.PauseTiming();
  auto child = std::make_unique<Tree>();
  int sv[2];
  socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
  state.ResumeTiming();
  SnapshotResult w;
  double writer_cpu_ms = 0;
  std::thread writer([&] {
    w = WriteSnapshot(*parent.vfs, sv[0]);
    timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    writer_cpu_ms = static_cast<double>(cpu.tv_sec) * 1e3 + static_cast<double>(cpu.tv_nsec) / 1e6;
  });
  SnapshotResult r = ReadSnapshot(*child->vfs, sv[1]);
  writer.join();
  state.PauseTiming();
  if (!r.ok() || !w.ok()) state.SkipWithError((r.error + w.error).c_str());
  state.counters["stream_bytes"] = static_cast<double>(r.stats.stream_bytes);
  // The writer's CPU (S1's side); the benchmark's own CPU column is the reader's.
  state.counters["writer_cpu_ms"] = writer_cpu_ms;
  *bytes += r.stats.stream_bytes;
  close(sv[0]);
  close(sv[1]);
  child.reset();
  state.ResumeTiming();
}

void BM_Copy1000SmallFiles(benchmark::State& state) {
  signal(SIGPIPE, SIG_IGN);
  Tree parent;
  Creds root;
  root.uid = root.gid = 0;
  for (int d = 0; d < 10; ++d) {
    auto at = parent.vfs->Walk(parent.vfs->root(), "/tmp/d" + std::to_string(d), {}, root);
    (void)parent.vfs->Create(*at, NodeKind::kDir, 0755, root);
    for (int i = 0; i < 100; ++i) {
      parent.AddFile("/tmp/d" + std::to_string(d), "f" + std::to_string(i) + ".py",
                     std::string(1024, 'a' + i % 26));
    }
  }
  uint64_t bytes = 0;
  for (auto _ : state) CopyOnce(state, parent, &bytes);
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_Copy1000SmallFiles)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CopyOne100MBFile(benchmark::State& state) {
  signal(SIGPIPE, SIG_IGN);
  Tree parent;
  parent.AddFile("/tmp", "data.bin", std::string(100 << 20, 'x'));
  uint64_t bytes = 0;
  for (auto _ : state) CopyOnce(state, parent, &bytes);
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_CopyOne100MBFile)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sentry::vfs

BENCHMARK_MAIN();
