// SysResult<T>: the answer a syscall handler gives the guest, a value or an errno.
//
// Guest errnos never travel through absl::Status (Debian 12's Abseil folds
// ENOENT, ESRCH and ENXIO into one code); they stay plain Linux errno values
// from the handler to the dispatcher, which alone turns them into -errno.
#ifndef SENTRY_BASE_SYS_RESULT_H_
#define SENTRY_BASE_SYS_RESULT_H_

#include <cassert>
#include <utility>
#include <variant>

namespace sentry {

// A Linux errno value owed to the guest (ENOENT, EACCES, ...).
struct Errno {
  int value;
};

template <typename T>
class [[nodiscard]] SysResult {
 public:
  SysResult(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  SysResult(Errno e) : v_(e) { assert(e.value > 0); }

  bool ok() const { return v_.index() == 0; }
  int error() const { return std::get<1>(v_).value; }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Errno> v_;
};

template <>
class [[nodiscard]] SysResult<void> {
 public:
  SysResult() = default;
  SysResult(Errno e) : err_(e.value) {}  // NOLINT
  bool ok() const { return err_ == 0; }
  int error() const { return err_; }

 private:
  int err_ = 0;
};

using SysStatus = SysResult<void>;

}  // namespace sentry

#define SENTRY_CONCAT_INNER(a, b) a##b
#define SENTRY_CONCAT(a, b) SENTRY_CONCAT_INNER(a, b)

// SYS_TRY(expr): returns the errno of a failed SysResult from the caller.
#define SYS_TRY(expr)                                               \
  do {                                                              \
    auto&& sys_try_r = (expr);                                      \
    if (!sys_try_r.ok()) return ::sentry::Errno{sys_try_r.error()}; \
  } while (0)

// SYS_ASSIGN_OR_RETURN(lhs, expr): unwraps a SysResult or returns its errno.
#define SYS_ASSIGN_OR_RETURN(lhs, expr) \
  SYS_ASSIGN_OR_RETURN_IMPL(SENTRY_CONCAT(sys_r_, __LINE__), lhs, expr)
#define SYS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)     \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return ::sentry::Errno{tmp.error()}; \
  lhs = std::move(tmp).value()

#endif  // SENTRY_BASE_SYS_RESULT_H_
