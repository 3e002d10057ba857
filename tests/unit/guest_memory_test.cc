// GuestMemory over a fake backend with mapped and unmapped pages, and over the
// real process_vm_readv/writev backend on this test's own pid.
#include "sentry/abi/guest_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace sentry {
namespace {

constexpr uint64_t kPage = GuestMemory::kPageSize;

template <typename R>
std::string ErrnoOf(const R& r) {
  return r.ok() ? "OK" : strerrorname_np(r.error());
}

std::string Value(SysResult<std::string> r) {
  return r.ok() ? std::move(r).value() : "<" + ErrnoOf(r) + ">";
}

// A sparse address space: the pages in pages_ are mapped, the rest fault. A
// chunk may span pages and comes back short at the first unmapped one, as
// process_vm_readv/writev do; every chunk asked for is recorded.
class FakeBackend final : public MemoryBackend {
 public:
  void Map(uint64_t page_addr, char fill = 0) {
    pages_[page_addr].assign(kPage, static_cast<uint8_t>(fill));
  }
  void Put(uint64_t addr, const std::string& bytes) {
    for (size_t i = 0; i < bytes.size(); ++i) Byte(addr + i) = static_cast<uint8_t>(bytes[i]);
  }
  std::string Get(uint64_t addr, size_t len) {
    std::string out;
    for (size_t i = 0; i < len; ++i) out.push_back(static_cast<char>(Byte(addr + i)));
    return out;
  }
  ssize_t ReadChunk(uint64_t addr, void* out, size_t len) override {
    return Copy(addr, len, [&](uint8_t* guest, size_t done, size_t n) {
      std::memcpy(static_cast<char*>(out) + done, guest, n);
    });
  }
  ssize_t WriteChunk(uint64_t addr, const void* in, size_t len) override {
    return Copy(addr, len, [&](uint8_t* guest, size_t done, size_t n) {
      std::memcpy(guest, static_cast<const char*>(in) + done, n);
    });
  }
  // Whether any chunk asked for so far spans two pages.
  bool AnyChunkCrossed() const {
    for (auto [addr, len] : chunks) {
      if (addr % kPage + len > kPage) return true;
    }
    return false;
  }
  std::vector<std::pair<uint64_t, size_t>> chunks;

 private:
  template <typename F>
  ssize_t Copy(uint64_t addr, size_t len, F copy) {
    EXPECT_GT(len, 0u);
    chunks.emplace_back(addr, len);
    size_t done = 0;
    while (done < len) {
      uint64_t at = addr + done;
      auto it = pages_.find(at - at % kPage);
      if (it == pages_.end()) break;
      size_t n = std::min<size_t>(len - done, kPage - at % kPage);
      copy(it->second.data() + at % kPage, done, n);
      done += n;
      if (at + n < at) break;  // the last page of the address space
    }
    return done > 0 ? static_cast<ssize_t>(done) : -EFAULT;
  }
  uint8_t& Byte(uint64_t addr) { return pages_.at(addr - addr % kPage)[addr % kPage]; }
  std::map<uint64_t, std::vector<uint8_t>> pages_;
};

class GuestMemoryTest : public ::testing::Test {
 protected:
  // Pages 0x10000 and 0x11000 are mapped; 0x12000 is not; 0x13000 is.
  void SetUp() override {
    fake_.Map(0x10000, 'a');
    fake_.Map(0x11000, 'b');
    fake_.Map(0x13000, 'd');
  }
  FakeBackend fake_;
  GuestMemory mem_{fake_};
};

TEST_F(GuestMemoryTest, CopyInAcrossAPageBoundary) {
  char buf[16];
  ASSERT_EQ(ErrnoOf(mem_.CopyIn(GuestAddr(0x11000 - 8), buf, sizeof(buf))), "OK");
  EXPECT_EQ(std::string(buf, 16), "aaaaaaaabbbbbbbb");
  EXPECT_EQ(fake_.chunks.size(), 1u);  // one call for both pages
  // A whole page and a bit, unaligned: one call too.
  std::vector<char> big(kPage + 100);
  ASSERT_EQ(ErrnoOf(mem_.CopyIn(GuestAddr(0x10010), big.data(), big.size())), "OK");
  EXPECT_EQ(big.front(), 'a');
  EXPECT_EQ(big.back(), 'b');
  EXPECT_EQ(fake_.chunks.size(), 2u);
}

TEST_F(GuestMemoryTest, AShortCopyAsksAgainFromWhereItStopped) {
  // Two mapped pages then a hole: the first call stops short at the hole, the
  // second starts there and faults; the bytes after the hole are never asked for.
  char buf[32];
  EXPECT_EQ(ErrnoOf(mem_.CopyIn(GuestAddr(0x12000 - 8), buf, sizeof(buf))), "EFAULT");
  ASSERT_EQ(fake_.chunks.size(), 2u);
  EXPECT_EQ(fake_.chunks[0], std::make_pair(uint64_t{0x12000 - 8}, size_t{32}));
  EXPECT_EQ(fake_.chunks[1], std::make_pair(uint64_t{0x12000}, size_t{24}));
  // A write so: the bytes before the hole are written (as copy_to_user does),
  // the page after it (0x13000, mapped) is untouched.
  const std::string data(kPage + 16, 'W');
  EXPECT_EQ(ErrnoOf(mem_.CopyOut(GuestAddr(0x11010), data.data(), data.size())), "EFAULT");
  EXPECT_EQ(fake_.Get(0x11ff0, 16), std::string(16, 'W'));
  EXPECT_EQ(fake_.Get(0x13000, 32), std::string(32, 'd'));
  EXPECT_EQ(fake_.chunks.size(), 4u);
}

TEST_F(GuestMemoryTest, CopyInTyped) {
  fake_.Put(0x10ffc, std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  auto v = mem_.CopyIn<uint64_t>(GuestAddr(0x10ffc));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 0x0807060504030201ull);
  EXPECT_EQ(ErrnoOf(mem_.CopyIn<uint64_t>(GuestAddr(0x11ffc))), "EFAULT");
}

TEST_F(GuestMemoryTest, CopyInFaultsWhenTheSecondPageIsUnmapped) {
  char buf[16];
  EXPECT_EQ(ErrnoOf(mem_.CopyIn(GuestAddr(0x12000 - 8), buf, sizeof(buf))), "EFAULT");
  EXPECT_EQ(ErrnoOf(mem_.CopyIn(GuestAddr(0x12000), buf, 1)), "EFAULT");
  EXPECT_EQ(ErrnoOf(mem_.CopyIn(GuestAddr(0), buf, 1)), "EFAULT");
  EXPECT_EQ(ErrnoOf(mem_.CopyIn(GuestAddr(0x12000), buf, 0)), "OK");  // nothing to read
}

TEST_F(GuestMemoryTest, CopyOutAcrossAPageBoundaryAndFaults) {
  const std::string data = "0123456789abcdef";
  ASSERT_EQ(ErrnoOf(mem_.CopyOut(GuestAddr(0x11000 - 8), data.data(), data.size())), "OK");
  EXPECT_EQ(fake_.Get(0x11000 - 8, 16), data);
  EXPECT_EQ(ErrnoOf(mem_.CopyOut(GuestAddr(0x12000 - 8), data.data(), data.size())), "EFAULT");
  EXPECT_EQ(ErrnoOf(mem_.CopyOutValue(GuestAddr(0x13000), uint32_t{0x41424344})), "OK");
  EXPECT_EQ(fake_.Get(0x13000, 4), "DCBA");
}

TEST_F(GuestMemoryTest, CopyOutSomeSaysHowMuchLanded) {
  const std::string data(64, 'S');
  auto n = mem_.CopyOutSome(GuestAddr(0x12000 - 24), data.data(), data.size());
  ASSERT_EQ(ErrnoOf(n), "OK");
  EXPECT_EQ(*n, 24u);  // up to the hole
  EXPECT_EQ(fake_.Get(0x12000 - 24, 24), std::string(24, 'S'));
  EXPECT_EQ(ErrnoOf(mem_.CopyOutSome(GuestAddr(0x12000), data.data(), data.size())), "EFAULT");
  n = mem_.CopyOutSome(GuestAddr(0x13000), data.data(), data.size());
  ASSERT_EQ(ErrnoOf(n), "OK");
  EXPECT_EQ(*n, 64u);
  n = mem_.CopyOutSome(GuestAddr(0x12000), data.data(), 0);  // nothing to write
  ASSERT_EQ(ErrnoOf(n), "OK");
  EXPECT_EQ(*n, 0u);
}

// A backend whose caller is gone after its first write (a notification
// withdrawn: ESRCH, NotifyLoop's backend).
class GoneAfterOneWrite final : public MemoryBackend {
 public:
  ssize_t ReadChunk(uint64_t, void*, size_t) override { return -ESRCH; }
  ssize_t WriteChunk(uint64_t addr, const void*, size_t len) override {
    if (writes++ > 0) return -ESRCH;
    return static_cast<ssize_t>(std::min<uint64_t>(len, kPage - addr % kPage));  // short
  }
  int writes = 0;
};

TEST(GuestMemoryGoneTest, AShortWriteThenAGoneCallerIsEfaultNotACount) {
  GoneAfterOneWrite backend;
  GuestMemory mem(backend);
  const std::string data(64, 'x');
  EXPECT_EQ(ErrnoOf(mem.CopyOutSome(GuestAddr(0x11000 - 16), data.data(), data.size())), "EFAULT");
  EXPECT_EQ(backend.writes, 2);
}

TEST_F(GuestMemoryTest, AddressOverflowIsEfault) {
  // The last page and page 0 are both mapped: a wrapped read would "succeed".
  fake_.Map(0xfffffffffffff000ull, 'z');
  fake_.Map(0, 0);
  char buf[32];
  GuestAddr near_end(0xfffffffffffffff0ull);
  EXPECT_EQ(ErrnoOf(mem_.CopyIn(near_end, buf, 32)), "EFAULT");
  EXPECT_EQ(ErrnoOf(mem_.CopyOut(near_end, buf, 32)), "EFAULT");
  EXPECT_EQ(ErrnoOf(mem_.CopyInString(near_end, 100)), "EFAULT");
  EXPECT_EQ(ErrnoOf(near_end.Offset(32)), "EFAULT");
  EXPECT_EQ(near_end.Offset(15)->raw(), 0xffffffffffffffffull);
}

TEST_F(GuestMemoryTest, CopyInStringStopsAtNul) {
  fake_.Put(0x10100, std::string("hello\0world", 11));
  auto s = mem_.CopyInString(GuestAddr(0x10100), 4095);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, "hello");
  fake_.Put(0x10200, std::string("\0", 1));
  EXPECT_EQ(Value(mem_.CopyInString(GuestAddr(0x10200), 10)), "");
}

TEST_F(GuestMemoryTest, CopyInStringAcrossAPageBoundary) {
  fake_.Put(0x11000 - 3, std::string("abcdef\0", 7));
  EXPECT_EQ(Value(mem_.CopyInString(GuestAddr(0x11000 - 3), 100)), "abcdef");
  EXPECT_FALSE(fake_.AnyChunkCrossed()) << "a string read spans a page";
}

TEST_F(GuestMemoryTest, CopyInStringWithoutNulWithinMaxIsEnametoolong) {
  fake_.Put(0x10000, std::string("0123456789\0", 11));
  EXPECT_EQ(Value(mem_.CopyInString(GuestAddr(0x10000), 10)), "0123456789");  // exactly max
  EXPECT_EQ(ErrnoOf(mem_.CopyInString(GuestAddr(0x10000), 9)), "ENAMETOOLONG");
  EXPECT_EQ(ErrnoOf(mem_.CopyInString(GuestAddr(0x10000), 0)), "ENAMETOOLONG");
  // The limit is met before the unmapped page: ENAMETOOLONG, not EFAULT.
  EXPECT_EQ(ErrnoOf(mem_.CopyInString(GuestAddr(0x11000), 100)), "ENAMETOOLONG");
}

TEST_F(GuestMemoryTest, CopyInStringIntoAnUnmappedPageIsEfault) {
  // Page 0x11000 is all 'b' and 0x12000 is unmapped.
  EXPECT_EQ(ErrnoOf(mem_.CopyInString(GuestAddr(0x11ff0), 4095)), "EFAULT");
  EXPECT_EQ(ErrnoOf(mem_.CopyInString(GuestAddr(0x12000), 4095)), "EFAULT");
  EXPECT_EQ(ErrnoOf(mem_.CopyInString(GuestAddr(0), 4095)), "EFAULT");
  EXPECT_FALSE(fake_.AnyChunkCrossed()) << "a string read spans a page";
}

TEST_F(GuestMemoryTest, CopyInStringEndingOnTheLastByteOfAPage) {
  // The NUL is the mapped page's last byte; the next page is unmapped.
  fake_.Put(0x12000 - 4, std::string("xyz\0", 4));
  EXPECT_EQ(Value(mem_.CopyInString(GuestAddr(0x12000 - 4), 4095)), "xyz");
  EXPECT_EQ(Value(mem_.CopyInString(GuestAddr(0x12000 - 1), 4095)), "");
  // The whole mapped page as a string of max length.
  fake_.Map(0x20000, 'q');
  fake_.Put(0x20fff, std::string("\0", 1));
  auto s = mem_.CopyInString(GuestAddr(0x20000), 4095);
  ASSERT_EQ(ErrnoOf(s), "OK");
  EXPECT_EQ(s->size(), 4095u);
  EXPECT_FALSE(fake_.AnyChunkCrossed()) << "a string read spans a page";
}

// The real backend on this process: process_vm_readv on oneself needs no
// ptrace permission.
class ProcessMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    void* p = mmap(nullptr, 3 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    base_ = static_cast<char*>(p);
    ASSERT_EQ(munmap(base_ + 2 * kPage, kPage), 0);  // the third page is a hole
  }
  void TearDown() override { munmap(base_, 2 * kPage); }
  GuestAddr At(size_t off) const { return GuestAddr(reinterpret_cast<uint64_t>(base_ + off)); }

  char* base_ = nullptr;
  ProcessMemoryBackend backend_{getpid()};
  GuestMemory mem_{backend_};
};

TEST_F(ProcessMemoryTest, CopiesAcrossPagesOfThisProcess) {
  std::memset(base_, 'a', kPage);
  std::memset(base_ + kPage, 'b', kPage);
  char buf[8];
  ASSERT_EQ(ErrnoOf(mem_.CopyIn(At(kPage - 4), buf, sizeof(buf))), "OK");
  EXPECT_EQ(std::string(buf, 8), "aaaabbbb");
  ASSERT_EQ(ErrnoOf(mem_.CopyOut(At(kPage - 2), "XYZW", 4)), "OK");
  EXPECT_EQ(std::string(base_ + kPage - 2, 4), "XYZW");
  std::strcpy(base_ + kPage - 3, "path/name");
  EXPECT_EQ(Value(mem_.CopyInString(At(kPage - 3), 4095)), "path/name");
}

TEST_F(ProcessMemoryTest, UnmappedAddressIsEfault) {
  char buf[8];
  EXPECT_EQ(ErrnoOf(mem_.CopyIn(At(2 * kPage), buf, 1)), "EFAULT");
  EXPECT_EQ(ErrnoOf(mem_.CopyIn(At(2 * kPage - 4), buf, 8)), "EFAULT");
  EXPECT_EQ(ErrnoOf(mem_.CopyOut(At(2 * kPage - 4), "12345678", 8)), "EFAULT");
  std::memset(base_ + kPage, 'c', kPage);  // no NUL before the hole
  EXPECT_EQ(ErrnoOf(mem_.CopyInString(At(kPage), 8192)), "EFAULT");
  base_[2 * kPage - 1] = '\0';
  EXPECT_EQ(mem_.CopyInString(At(kPage), 8192)->size(), kPage - 1);
  EXPECT_EQ(ErrnoOf(mem_.CopyIn(GuestAddr(0), buf, 1)), "EFAULT");
  EXPECT_EQ(ErrnoOf(mem_.CopyIn(GuestAddr(0xfffffffffffff000ull), buf, 1)), "EFAULT");
}

}  // namespace
}  // namespace sentry
