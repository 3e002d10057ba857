// The macros that spell the rows of the syscall tables (table.cc and
// table_without_namespaces.cc). Included only by those two files.
#ifndef SENTRY_SYSCALLS_TABLE_ROWS_H_
#define SENTRY_SYSCALLS_TABLE_ROWS_H_

#include "syscalls/handlers.h"
#include "syscalls/table.h"

// clang-format off
#define NATIVE(nr, name, args) \
  { nr, #name, Action::kNative, 0, nullptr, ArgFilter::kNone, args }
#define FILTERED(nr, name, filter, err, args) \
  { nr, #name, Action::kNative, err, nullptr, filter, args }
#define TRAP(nr, name, handler, args) \
  { nr, #name, Action::kTrap, 0, &::sentry::sys::handler, ArgFilter::kNone, args }
// A trap only when the filter's argument test fails; native otherwise.
#define TRAP_UNLESS(nr, name, handler, filter, args) \
  { nr, #name, Action::kTrap, 0, &::sentry::sys::handler, filter, args }
#define TRACE(nr, name, args) \
  { nr, #name, Action::kTrace, 0, nullptr, ArgFilter::kNone, args }
#define DENY(nr, name, err, args) \
  { nr, #name, Action::kErrno, err, nullptr, ArgFilter::kNone, args }
// clang-format on

#endif  // SENTRY_SYSCALLS_TABLE_ROWS_H_
