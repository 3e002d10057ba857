#include "loader/launch.h"

#include <unistd.h>

#include <cerrno>
#include <string>

#include "loader/loader_internal.h"

namespace sentry {

namespace {

char g_launch_bytes[kMaxLaunchBytes];
char* g_launch_pointers[kMaxLaunchStrings + 2];

LOADER_CODE bool ReadFull(int fd, void* buf, size_t n) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

LOADER_CODE bool ReadLaunch(int fd, Launch* l) {
  if (!ReadFull(fd, &l->header, sizeof(l->header))) return false;
  const LaunchHeader& h = l->header;
  size_t fixed = sizeof(h) + h.rlimits * sizeof(LaunchRlimit);
  if (h.rlimits > kMaxLaunchRlimits || h.argc == 0 ||
      static_cast<size_t>(h.argc) + h.envc > kMaxLaunchStrings || h.bytes < fixed ||
      h.bytes - fixed > kMaxLaunchBytes) {
    return false;
  }
  if (!ReadFull(fd, l->rlimits, h.rlimits * sizeof(LaunchRlimit))) return false;
  size_t n = h.bytes - fixed;
  if (n == 0 || !ReadFull(fd, g_launch_bytes, n) || g_launch_bytes[n - 1] != '\0') return false;
  // 1 + argc + envc strings, each NUL-terminated; argv and envp each end with
  // a null pointer.
  size_t want = 1 + h.argc + h.envc, got = 0, start = 0;
  char** out = g_launch_pointers;
  for (size_t i = 0; i < n && got < want; ++i) {
    if (g_launch_bytes[i] != '\0') continue;
    char* s = g_launch_bytes + start;
    start = i + 1;
    if (got == 0) {
      l->path = s;
    } else if (got <= h.argc) {
      *out++ = s;
      if (got == h.argc) *out++ = nullptr;
    } else {
      *out++ = s;
    }
    ++got;
  }
  if (got != want || start != n) return false;
  *out = nullptr;
  l->argv = g_launch_pointers;
  l->envp = g_launch_pointers + h.argc + 1;
  return true;
}

std::string EncodeGuestLaunch(const GuestLaunch& launch) {
  if (launch.argv.empty() || launch.rlimits.size() > kMaxLaunchRlimits ||
      launch.argv.size() + launch.envp.size() > kMaxLaunchStrings) {
    return "";
  }
  std::string strings;
  auto add = [&strings](const std::string& s) {
    strings.append(s.c_str());  // up to an embedded NUL, as execve would see it
    strings.push_back('\0');
  };
  add(launch.path);
  for (const std::string& a : launch.argv) add(a);
  for (const std::string& e : launch.envp) add(e);
  if (strings.size() > kMaxLaunchBytes) return "";
  LaunchHeader h{};
  h.argc = static_cast<uint32_t>(launch.argv.size());
  h.envc = static_cast<uint32_t>(launch.envp.size());
  h.rlimits = static_cast<uint32_t>(launch.rlimits.size());
  h.bytes = static_cast<uint32_t>(sizeof(h) + h.rlimits * sizeof(LaunchRlimit) + strings.size());
  std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
  for (const GuestLaunch::Rlimit& r : launch.rlimits) {
    LaunchRlimit lr{r.resource, 0, r.Soft(), r.value};
    out.append(reinterpret_cast<const char*>(&lr), sizeof(lr));
  }
  return out + strings;
}

}  // namespace sentry
