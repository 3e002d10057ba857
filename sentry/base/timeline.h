// A timeline of the steps of one operation across the server's processes,
// for a benchmark to say where the time goes (bench/session_fork.py
// --timeline: a session fork's request, its supervisors, its hand-offs; a
// `sentry run`'s phases, its main and exit: bench/README.md "--timings").
//
// Off unless the sentry starts with SENTRY_TIMELINE=FILE: main() then opens
// FILE (appending) once, and every process the sentry forks without exec
// (the session launcher's zygote, each supervisor) writes to that fd. A mark
// is one line, "NS PID EVENT" (CLOCK_MONOTONIC nanoseconds, one clock for
// every process of the host), written whole by one write(2). The fd is
// close-on-exec: no guest ever holds it. Off, a mark is one load and branch.
#ifndef SENTRY_BASE_TIMELINE_H_
#define SENTRY_BASE_TIMELINE_H_

#include <string_view>

namespace sentry::timeline {

// Opens the file SENTRY_TIMELINE names, if set (call once, early in main).
void OpenFromEnvironment();
bool Enabled();
void Mark(std::string_view event);
// "EVENT.N": a step of the N-th of several (a child of a fork).
void Mark(std::string_view event, long n);

}  // namespace sentry::timeline

#endif  // SENTRY_BASE_TIMELINE_H_
