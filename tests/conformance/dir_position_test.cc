// A directory listing's position: small buffers, lseek to a d_off, telldir and
// seekdir, rewinddir, and entries added or removed while a listing is read.
// POSIX leaves open whether an entry added or removed after opendir shows;
// what it does fix (and these check) is that every other entry shows exactly
// once, and that a position the listing handed out stays a position.
#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

using Names = std::vector<std::string>;

std::string EntryName(int i) { return "e" + std::to_string(i); }

// Makes n empty files e0..e(n-1).
void MakeEntries(const ScratchDir& dir, int n) {
  for (int i = 0; i < n; ++i) ASSERT_TRUE(WriteFile(dir.Path(EntryName(i)), ""));
}

struct Record {
  std::string name;
  off_t d_off;
};

// One getdents64 call's records (buf holds the bytes).
std::vector<Record> Records(const char* buf, long n) {
  std::vector<Record> out;
  for (long off = 0; off < n;) {
    const auto* entry = reinterpret_cast<const struct dirent64*>(buf + off);
    out.push_back({entry->d_name, entry->d_off});
    off += entry->d_reclen;
  }
  return out;
}

// Reads fd to its end with getdents64 calls of `size` bytes.
Names ReadRest(int fd, size_t size) {
  Names names;
  alignas(8) char buf[4096];
  long n;
  while ((n = syscall(SYS_getdents64, fd, buf, size)) > 0) {
    for (const Record& r : Records(buf, n)) names.push_back(r.name);
  }
  EXPECT_EQ(n, 0);
  return names;
}

// Reads up to `want` records with calls of `size` bytes.
Names ReadSome(int fd, size_t size, size_t want) {
  Names names;
  alignas(8) char buf[4096];
  while (names.size() < want) {
    long n = syscall(SYS_getdents64, fd, buf, size);
    if (n <= 0) break;
    for (const Record& r : Records(buf, n)) names.push_back(r.name);
  }
  return names;
}

std::map<std::string, int> Counts(const Names& names) {
  std::map<std::string, int> counts;
  for (const std::string& n : names) ++counts[n];
  return counts;
}

// A 64-byte buffer holds one or two records: every name once, as the red
// team's storm reads a large directory (issue 23).
TEST(GetdentsPositionTest, SixtyFourByteBufferListsEveryNameOnce) {
  ScratchDir dir;
  MakeEntries(dir, 500);
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  std::map<std::string, int> counts = Counts(ReadRest(fd.get(), 64));
  EXPECT_EQ(counts.size(), 502u);
  for (const auto& [name, count] : counts) EXPECT_EQ(count, 1) << name;
}

// lseek to the d_off of a record: the next call starts with the record after it.
TEST(GetdentsPositionTest, LseekToAnEntrysOffsetResumesAfterIt) {
  ScratchDir dir;
  MakeEntries(dir, 100);
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  std::vector<Record> all;
  alignas(8) char buf[4096];
  long n;
  while ((n = syscall(SYS_getdents64, fd.get(), buf, 96)) > 0) {
    for (const Record& r : Records(buf, n)) all.push_back(r);
  }
  ASSERT_EQ(all.size(), 102u);
  for (size_t at : {size_t{0}, size_t{1}, size_t{2}, size_t{37}, size_t{70}, size_t{100}}) {
    SCOPED_TRACE(at);
    ASSERT_EQ(lseek(fd.get(), all[at].d_off, SEEK_SET), all[at].d_off);
    n = syscall(SYS_getdents64, fd.get(), buf, 64);
    ASSERT_GT(n, 0);
    EXPECT_EQ(Records(buf, n)[0].name, all[at + 1].name);
  }
  // The last record's d_off is the end.
  ASSERT_EQ(lseek(fd.get(), all.back().d_off, SEEK_SET), all.back().d_off);
  EXPECT_EQ(syscall(SYS_getdents64, fd.get(), buf, 64), 0);
}

// telldir/seekdir (glibc: the d_off of the last record readdir returned,
// then an lseek): back to the same entry, before and after other reads.
TEST(GetdentsPositionTest, SeekdirReturnsToTelldirsEntry) {
  ScratchDir dir;
  MakeEntries(dir, 200);
  DIR* d = opendir(dir.path().c_str());
  ASSERT_NE(d, nullptr);
  for (int i = 0; i < 50; ++i) ASSERT_NE(readdir(d), nullptr);
  long mark = telldir(d);
  struct dirent* e = readdir(d);
  ASSERT_NE(e, nullptr);
  std::string after_mark = e->d_name;
  for (int i = 0; i < 80; ++i) ASSERT_NE(readdir(d), nullptr);
  seekdir(d, mark);
  e = readdir(d);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(std::string(e->d_name), after_mark);
  // And the rest from there: every name once to the end.
  std::set<std::string> rest{after_mark};
  while ((e = readdir(d)) != nullptr) EXPECT_TRUE(rest.insert(e->d_name).second) << e->d_name;
  EXPECT_EQ(rest.size(), 202u - 50u);  // from the 51st on
  closedir(d);
}

// rewinddir (lseek to 0) restarts the listing, and a file made meanwhile shows.
TEST(GetdentsPositionTest, RewinddirRestartsAndShowsNewEntries) {
  ScratchDir dir;
  MakeEntries(dir, 50);
  DIR* d = opendir(dir.path().c_str());
  ASSERT_NE(d, nullptr);
  for (int i = 0; i < 20; ++i) ASSERT_NE(readdir(d), nullptr);
  ASSERT_TRUE(WriteFile(dir.Path("made-later"), ""));
  rewinddir(d);
  Names names;
  while (struct dirent* e = readdir(d)) names.push_back(e->d_name);
  closedir(d);
  std::map<std::string, int> counts = Counts(names);
  EXPECT_EQ(counts.size(), 53u);
  EXPECT_EQ(counts["made-later"], 1);
  for (const auto& [name, count] : counts) EXPECT_EQ(count, 1) << name;
}

// Entries added in the middle of a listing: none of the others is skipped or
// shown twice, and no name shows twice.
TEST(GetdentsPositionTest, EntriesAddedDuringAListingSkipNoneAndRepeatNone) {
  ScratchDir dir;
  MakeEntries(dir, 300);
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  Names names = ReadSome(fd.get(), 64, 100);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(WriteFile(dir.Path("added" + std::to_string(i)), ""));
  Names rest = ReadRest(fd.get(), 64);
  names.insert(names.end(), rest.begin(), rest.end());
  std::map<std::string, int> counts = Counts(names);
  for (const auto& [name, count] : counts) EXPECT_EQ(count, 1) << name;
  for (int i = 0; i < 300; ++i) EXPECT_EQ(counts.count(EntryName(i)), 1u) << EntryName(i);
}

// Entries removed in the middle of a listing, read or not yet read: every
// entry that stays shows exactly once.
TEST(GetdentsPositionTest, EntriesRemovedDuringAListingSkipNoneThatStay) {
  ScratchDir dir;
  MakeEntries(dir, 300);
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  Names names = ReadSome(fd.get(), 64, 100);
  for (int i = 0; i < 300; i += 3) {
    ASSERT_SYSCALL_SUCCEEDS(unlink(dir.Path(EntryName(i)).c_str()));
  }
  Names rest = ReadRest(fd.get(), 64);
  names.insert(names.end(), rest.begin(), rest.end());
  std::map<std::string, int> counts = Counts(names);
  for (const auto& [name, count] : counts) EXPECT_EQ(count, 1) << name;
  for (int i = 0; i < 300; ++i) {
    if (i % 3 != 0) {
      EXPECT_EQ(counts.count(EntryName(i)), 1u) << EntryName(i);
    }
  }
}

// Two fds of one directory keep positions of their own.
TEST(GetdentsPositionTest, TwoOpenFdsKeepTheirOwnPositions) {
  ScratchDir dir;
  MakeEntries(dir, 100);
  UniqueFd a(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd b(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(a.get());
  ASSERT_SYSCALL_SUCCEEDS(b.get());
  Names from_a, from_b;
  alignas(8) char buf[64];
  long na = 1, nb = 1;
  while (na > 0 || nb > 0) {  // interleaved, one small call each
    if (na > 0 && (na = syscall(SYS_getdents64, a.get(), buf, sizeof(buf))) > 0) {
      for (const Record& r : Records(buf, na)) from_a.push_back(r.name);
    }
    if (nb > 0 && (nb = syscall(SYS_getdents64, b.get(), buf, sizeof(buf))) > 0) {
      for (const Record& r : Records(buf, nb)) from_b.push_back(r.name);
    }
  }
  EXPECT_EQ(from_a.size(), 102u);
  EXPECT_EQ(from_a, from_b);
}

}  // namespace
}  // namespace sentry::conformance
