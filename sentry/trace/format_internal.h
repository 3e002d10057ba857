// The printer's own helpers, shared by its files (format_file.cc,
// format_process.cc, syscall_format.cc). Not for use elsewhere.
#ifndef SENTRY_TRACE_FORMAT_INTERNAL_H_
#define SENTRY_TRACE_FORMAT_INTERNAL_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "sentry/trace/syscall_format.h"
#include "sentry/trace/trace_flags.h"
#include "sentry/trace/trace_structs.h"

namespace sentry::trace::internal {

// Arguments appended one by one, strace-style.
class ArgList final {
 public:
  ArgList(const TracedCall& c, GuestMemory* mem) : c_(c), mem_(mem) {}

  // What the call wrote may be shown: it finished and succeeded.
  bool ok() const { return c_.done && c_.ret >= 0; }
  int64_t ret() const { return c_.ret; }
  uint64_t u(int i) const { return c_.args[i]; }
  int d(int i) const { return static_cast<int>(c_.args[i]); }
  GuestMemory* mem() const { return mem_; }

  ArgList& Add(std::string s) {
    absl::StrAppend(&out_, out_.empty() ? "" : ", ", s);
    return *this;
  }
  ArgList& Int(int i) { return Add(absl::StrCat(d(i))); }
  ArgList& Long(int i) { return Add(absl::StrCat(static_cast<int64_t>(u(i)))); }
  ArgList& Unsigned(int i) { return Add(absl::StrCat(u(i))); }
  ArgList& Fd(int i) { return Int(i); }
  ArgList& Dirfd(int i) { return Add(trace::Dirfd(static_cast<int64_t>(u(i)))); }
  ArgList& Path(int i) { return Add(trace::Path(mem_, u(i))); }
  ArgList& Str(int i) { return Add(trace::CString(mem_, u(i))); }
  ArgList& Ptr(int i) { return Add(Addr(u(i))); }
  ArgList& Mode(int i) { return Add(PermMode(u(i))); }
  // What the call writes at argument i: decoded by f once it succeeded.
  template <typename F>
  ArgList& Out(int i, F f) {
    return Add(ok() && u(i) != 0 ? f() : Addr(u(i)));
  }
  const std::string& str() const { return out_; }

 private:
  const TracedCall& c_;
  GuestMemory* mem_;
  std::string out_;
};

// Each returns false when it does not know the call.
bool FormatFileCall(ArgList& a, int nr);
bool FormatProcessCall(ArgList& a, int nr);
bool FormatNetMemCall(ArgList& a, int nr);

}  // namespace sentry::trace::internal

#endif  // SENTRY_TRACE_FORMAT_INTERNAL_H_
