// The macros that spell the rows of the syscall tables (table.cc and
// table_without_namespaces.cc). Included only by those two files.
#ifndef SENTRY_SYSCALLS_TABLE_ROWS_H_
#define SENTRY_SYSCALLS_TABLE_ROWS_H_

#include "syscalls/handlers.h"
#include "syscalls/table.h"

// clang-format off
// Native rows (and the native half of TRAP_UNLESS) name the wall that confines
// what their arguments name, and say why they are safe: the table test checks
// the rule of the table (DESIGN.md) against the argument kinds.
#define NATIVE(nr, name, args, wall, why) \
  { nr, #name, Action::kNative, 0, nullptr, ArgFilter::kNone, args, Wall::wall, why }
#define FILTERED(nr, name, filter, err, args, wall, why) \
  { nr, #name, Action::kNative, err, nullptr, filter, args, Wall::wall, why }
#define TRAP(nr, name, handler, args) \
  { nr, #name, Action::kTrap, 0, &::sentry::sys::handler, ArgFilter::kNone, args, Wall::kNone, nullptr }
// A trap only when the filter's argument test fails; native otherwise.
#define TRAP_UNLESS(nr, name, handler, filter, args, wall, why) \
  { nr, #name, Action::kTrap, 0, &::sentry::sys::handler, filter, args, Wall::wall, why }
// The same rows for a call that makes a kernel object natively: the pool
// that bounds it (see Pool in table.h, the rule of the pools).
#define NATIVE_ALLOC(nr, name, args, wall, pool, why) \
  { nr, #name, Action::kNative, 0, nullptr, ArgFilter::kNone, args, Wall::wall, why, Pool::pool }
#define FILTERED_ALLOC(nr, name, filter, err, args, wall, pool, why) \
  { nr, #name, Action::kNative, err, nullptr, filter, args, Wall::wall, why, Pool::pool }
#define TRAP_UNLESS_ALLOC(nr, name, handler, filter, args, wall, pool, why) \
  { nr, #name, Action::kTrap, 0, &::sentry::sys::handler, filter, args, Wall::wall, why, Pool::pool }
#define TRAP_UNLESS_ALLOC_ERR(nr, name, handler, filter, err, args, wall, pool, why) \
  { nr, #name, Action::kTrap, err, &::sentry::sys::handler, filter, args, Wall::wall, why, Pool::pool }
#define TRAP_ALLOC(nr, name, handler, args, pool) \
  { nr, #name, Action::kTrap, 0, &::sentry::sys::handler, ArgFilter::kNone, args, Wall::kNone, nullptr, Pool::pool }
#define TRACE(nr, name, args) \
  { nr, #name, Action::kTrace, 0, nullptr, ArgFilter::kNone, args, Wall::kNone, nullptr }
#define DENY(nr, name, err, args) \
  { nr, #name, Action::kErrno, err, nullptr, ArgFilter::kNone, args, Wall::kNone, nullptr }
// clang-format on

#endif  // SENTRY_SYSCALLS_TABLE_ROWS_H_
