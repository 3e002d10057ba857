// The warm interpreter's bootstrap: what a pooled Python runs before its
// script is known (`sentry pool --python`).
//
// The guest is started as `python3 -c BOOTSTRAP MODULE...`. The bootstrap
// imports the preloaded modules, writes one byte on stdout (the sentry's
// stdout relay drops all output until the run is configured, and takes the
// first byte as "ready"), and blocks reading its stdin: a pipe only the
// sentry writes. When a run comes, the sentry writes the request there,
// framed as EncodeBootstrapRequest says, and then the run's own stdin. The
// bootstrap reads exactly the request's bytes with os.read (sys.stdin's
// buffer is untouched), then:
//   - sets the run's extra environment variables (os.environ) and cwd;
//   - makes the script a __main__ module as a cold start makes it: the same
//     keys in the same order, __file__, __loader__ (SourceFileLoader for a
//     script), and sys.argv, sys.orig_argv, sys.path[0];
//   - compiles and runs the code in that module's dict; an uncaught
//     exception goes to sys.excepthook without the bootstrap's frame;
//   - ends as Py_FinalizeEx would, as far as Python code can see: the
//     non-daemon threads joined, atexit, the streams flushed, sys.modules and
//     the builtins emptied as finalize_modules does (a __del__ runs, an
//     unflushed file is written), then os._exit with the exit status (or
//     SIGINT after a KeyboardInterrupt, as Python's own exit does); it
//     leaves the interpreter's own teardown to the process's end (half the
//     run's time). What it cannot do the same way (a daemon thread still
//     running, a flush that fails, gc callbacks or debug flags, a SystemExit
//     Python prints) it leaves to Python's own exit.
// Nothing new crosses the wall: the request travels on the guest's own stdin
// pipe, and the bootstrap runs with the same filter and namespaces as the
// script it starts; what it parses is the sentry's, bounded by it
// (kMaxBootstrapRequest), and it imports nothing beyond what Python's start
// already loaded.
#ifndef SENTRY_POOL_WARM_BOOTSTRAP_H_
#define SENTRY_POOL_WARM_BOOTSTRAP_H_

#include <string>
#include <vector>

#include "sentry/run/run.h"

namespace sentry {

inline constexpr size_t kMaxBootstrapRequest = 16 << 20;

// The Python source given to `python3 -c`.
const char* WarmBootstrapSource();

// Whether a warm interpreter can run o's command as a cold start would: a
// `python3 SCRIPT ARGS...` or `python3 -c CODE ARGS...` with no interpreter
// flag but -u (which the bootstrap applies to stdout and stderr), and no --env that Python or libc
// reads at start (PYTHON*, LD_*, LC_*, LANG, HOME, PATH...). If not, *why says what needs a cold
// start.
bool WarmPythonCanServe(const RunOptions& o, std::string* why);

// The request the bootstrap reads: u32 length, then records (u8 tag, u32
// length, bytes): 'a' an argv item (in order), 'e' a K=V, 'd' the cwd.
std::string EncodeBootstrapRequest(const std::vector<std::string>& argv,
                                   const std::vector<std::string>& env, const std::string& cwd);

}  // namespace sentry

#endif  // SENTRY_POOL_WARM_BOOTSTRAP_H_
