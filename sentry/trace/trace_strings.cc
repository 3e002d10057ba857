// Strings and arrays of guest memory, as strace quotes them (see trace_structs.h).
#include <climits>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/trace/trace_structs.h"

namespace sentry::trace {
namespace {

bool IsOctal(unsigned char c) { return c >= '0' && c <= '7'; }

// At most max bytes up to (not including) a NUL; *more: no NUL within max.
bool ReadCString(GuestMemory* mem, uint64_t addr, size_t max, std::string* out, bool* more) {
  if (!mem || addr == 0) return false;
  auto s = mem->CopyInString(GuestAddr(addr), max);
  if (s.ok()) {
    *out = std::move(*s);
    *more = false;
    return true;
  }
  if (s.error() != ENAMETOOLONG) return false;
  out->resize(max);
  if (!mem->CopyIn(GuestAddr(addr), out->data(), max).ok()) return false;
  *more = true;
  return true;
}

}  // namespace

std::string Addr(uint64_t addr) { return addr == 0 ? "NULL" : absl::StrFormat("%#x", addr); }

// As strace's string_quote: C escapes for the common controls, the shortest
// octal escape otherwise (three digits when an octal digit follows).
std::string Quote(std::string_view bytes, bool more) {
  std::string out = "\"";
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto c = static_cast<unsigned char>(bytes[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\f':
        out += "\\f";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\v':
        out += "\\v";
        continue;
      default:
        break;
    }
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    out += '\\';
    bool full = i + 1 < bytes.size() && IsOctal(static_cast<unsigned char>(bytes[i + 1]));
    if (full || (c >> 6)) out += static_cast<char>('0' + (c >> 6));
    if (full || (c >> 3)) out += static_cast<char>('0' + ((c >> 3) & 7));
    out += static_cast<char>('0' + (c & 7));
  }
  out += '"';
  if (more) out += "...";
  return out;
}

std::string Path(GuestMemory* mem, uint64_t addr) {
  std::string s;
  bool more;
  if (!ReadCString(mem, addr, PATH_MAX - 1, &s, &more)) return Addr(addr);
  return Quote(s, more);
}

std::string CString(GuestMemory* mem, uint64_t addr) {
  std::string s;
  bool more;
  if (!ReadCString(mem, addr, kMaxStrLen, &s, &more)) return Addr(addr);
  return Quote(s, more);
}

std::string Buffer(GuestMemory* mem, uint64_t addr, uint64_t len) {
  if (!mem || addr == 0) return Addr(addr);
  size_t n = len > kMaxStrLen ? kMaxStrLen : len;
  std::string s(n, '\0');
  if (n && !mem->CopyIn(GuestAddr(addr), s.data(), n).ok()) return Addr(addr);
  return Quote(s, len > kMaxStrLen);
}

std::string StringArray(GuestMemory* mem, uint64_t addr) {
  if (!mem || addr == 0) return Addr(addr);
  std::string out = "[";
  for (size_t i = 0;; ++i) {
    auto p = mem->CopyIn<uint64_t>(GuestAddr(addr + 8 * i));
    if (!p.ok()) return i == 0 ? Addr(addr) : out + ", ...]";
    if (*p == 0) break;
    if (i == kMaxStrLen) return out + ", ...]";
    absl::StrAppend(&out, i ? ", " : "", CString(mem, *p));
  }
  return out + "]";
}

std::string EnvArray(GuestMemory* mem, uint64_t addr) {
  if (!mem || addr == 0) return Addr(addr);
  constexpr size_t kBatch = 512, kMax = size_t{1} << 17;
  std::vector<uint64_t> ptrs(kBatch);
  size_t count = 0;
  while (count < kMax) {
    // Read to the end of the page, a batch at most: the array may end on one.
    uint64_t at = addr + 8 * count;
    size_t in_page = (GuestMemory::kPageSize - at % GuestMemory::kPageSize) / 8;
    size_t n = std::min(kBatch, std::max<size_t>(in_page, 1));
    if (!mem->CopyIn(GuestAddr(at), ptrs.data(), 8 * n).ok()) return Addr(addr);
    for (size_t i = 0; i < n; ++i, ++count) {
      if (ptrs[i] == 0)
        return absl::StrFormat("%#x /* %d var%s */", addr, count, count == 1 ? "" : "s");
    }
  }
  return Addr(addr);
}

std::string IntPair(GuestMemory* mem, uint64_t addr) {
  int fds[2];
  if (!mem || addr == 0 || !mem->CopyIn(GuestAddr(addr), fds, sizeof(fds)).ok()) return Addr(addr);
  return absl::StrCat("[", fds[0], ", ", fds[1], "]");
}

std::string XattrList(GuestMemory* mem, uint64_t addr, int64_t len) {
  if (len <= 0) return Addr(addr);
  return Buffer(mem, addr, static_cast<uint64_t>(len));
}

}  // namespace sentry::trace
