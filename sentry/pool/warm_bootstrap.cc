#include "sentry/pool/warm_bootstrap.h"

#include <cstdint>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace sentry {
namespace {

// Runs as `python3 -c` (see warm_bootstrap.h). Everything is a local of _w,
// whose frame the traceback of an uncaught exception leaves out; __main__'s
// dict is emptied and refilled as a cold start fills it. Exit 125 on a
// malformed request (the sentry's own error), 3 if a preload fails.
// Unlike a cold start, gc.get_freeze_count() is not 0 (see gc.freeze below),
// a `-u` run's sys.flags.unbuffered is 0 (its streams are -u's), and at the
// exit sys.is_finalizing() is False in a __del__, the globals of modules
// there before the script are not emptied, and the __del__ of objects in
// cycles may come in another order (the collector's lists are not a cold
// start's).
constexpr const char kBootstrap[] = R"PY(def _w():
    import sys, os
    def preload():
        try:
            for m in sys.argv[1:]:
                __import__(m)
        except BaseException:
            os._exit(3)
        # compile()'s first call builds the AST node types (PyAST_Check):
        # 8M instructions, more than the rest of a small run with its exit.
        # Made here, before the run; nothing is imported.
        compile('', '<string>', 'exec')
        # What start-up made is kept out of the collector's passes: the
        # exit's collection then walks the script's objects only (a preloaded
        # pandas made the exit slower than the script). gc leaves
        # sys.modules, as a cold script finds it.
        import gc
        gc.freeze()
        del sys.modules['gc']
        # What finish restores and leaves: the builtins as Python made them
        # before its start added these (its exit restores that copy), and
        # the modules there before the script.
        initial = dict(sys.modules['builtins'].__dict__)
        for n in ('open', 'exit', 'quit', 'copyright', 'credits', 'license', 'help'):
            initial.pop(n, None)
        module, weak = type(sys), sys.modules['_weakref'].ref
        return gc, initial, {id(m): weak(m) for m in sys.modules.values() if isinstance(m, module)}
    def take(n):
        b = bytearray()
        while len(b) < n:
            c = os.read(0, min(n - len(b), 1 << 20))
            if not c:
                os._exit(125)
            b += c
        return bytes(b)
    def request():
        n = int.from_bytes(take(4), 'little')
        if n > LIMIT:
            os._exit(125)
        body = take(n)
        argv, i = [], 0
        while i < n:
            if i + 5 > n:
                os._exit(125)
            t, k = body[i], int.from_bytes(body[i + 1:i + 5], 'little')
            i += 5
            if i + k > n:
                os._exit(125)
            v = os.fsdecode(body[i:i + k])
            i += k
            if t == 97:
                argv.append(v)
            elif t == 101:
                k, _, v = v.partition('=')
                os.environ[k] = v
            elif t == 100:
                os.chdir(v)
            else:
                os._exit(125)
        a = argv[2:] if len(argv) > 1 and argv[1] == '-u' else argv[1:]
        if not a or (a[0] == '-c' and len(a) < 2):
            os._exit(125)
        return argv
    def unbuffered():
        # What `python3 -u` makes of stdout and stderr at its start
        # (create_stdio in Python/pylifecycle.c): a raw FileIO named as the
        # stream, under a write-through, not line-buffered TextIOWrapper.
        io = sys.modules['io']
        for name, fd in (('stdout', 1), ('stderr', 2)):
            old = getattr(sys, name)
            raw = io.open(fd, 'wb', 0, None, None, None, False)
            raw.name = '<%s>' % name
            new = io.TextIOWrapper(raw, old.encoding, old.errors, '\n', False, True)
            new.mode = 'w'
            setattr(sys, '__%s__' % name, new)
            setattr(sys, name, new)
    def main(argv):
        # The script's __main__ is a module of its own, not the one whose
        # dict these functions' globals are: at the exit it goes as a cold
        # run's does, with nothing of the bootstrap holding it.
        old = sys.modules['__main__'].__dict__
        module = type(sys)('__main__')
        g = module.__dict__
        loader, path = old['__loader__'], None
        sys.orig_argv = list(argv)
        if argv[1] == '-u':
            unbuffered()
            argv = argv[:1] + argv[2:]
        if argv[1] == '-c':
            src, name, path0 = argv[2], '<string>', ''
            sys.argv[:] = ['-c'] + argv[3:]
        else:
            sys.argv[:] = argv[1:]
            path = argv[1] if argv[1].startswith('/') else os.getcwd() + '/' + argv[1]
            name, path0 = path, os.path.dirname(os.path.realpath(path))
            try:
                with open(path, 'rb') as f:
                    src = f.read()
            except OSError as e:
                sys.stderr.write("%s: can't open file %r: [Errno %d] %s\n"
                                 % (argv[0], path, e.errno, e.strerror))
                raise SystemExit(2)
            loader = sys.modules['_frozen_importlib_external'].SourceFileLoader('__main__', path)
        bi = old['__builtins__']
        g.clear()
        g.update(__name__='__main__', __doc__=None, __package__=None, __loader__=loader,
                 __spec__=None, __annotations__={}, __builtins__=bi)
        if path is not None:
            g.update(__file__=path, __cached__=None)
        sys.path[0] = path0
        sys.modules['__main__'] = module
        return g, src, name
    # What runs after the script binds the builtins it uses before (a
    # script may replace builtins.type).
    def run(g, src, name, SystemExit=SystemExit, BaseException=BaseException,
            KeyboardInterrupt=KeyboardInterrupt, type=type, isinstance=isinstance, int=int,
            compile=compile, exec=exec, sys=sys):
        try:
            code = compile(src, name, 'exec', dont_inherit=True)
            del src, name
            exec(code, g)
            return 0, False
        except SystemExit as e:
            c = e.code
            # A code Python prints (not None or an int): its own exit.
            if c is not None and not (isinstance(c, int) and -2**63 <= c < 2**63):
                raise
            return c or 0, False
        except BaseException as e:
            tb = e.__traceback__.tb_next
            e.__traceback__ = tb
            sys.last_type, sys.last_value, sys.last_traceback = type(e), e, tb
            sys.excepthook(type(e), e, tb)
            return 1, isinstance(e, KeyboardInterrupt)
    def finish(status, sigint, gc, initial, startup, sys=sys, exit_=os._exit, kill=os.kill,
               getpid=os.getpid, signal=sys.modules['_signal'].signal, id=id, dict=dict,
               type=type, len=len, list=list, isinstance=isinstance, reversed=reversed,
               getattr=getattr, setattr=setattr, BaseException=BaseException,
               SystemExit=SystemExit, __import__=__import__):
        # Py_FinalizeEx's part that Python code sees, then os._exit: the rest
        # frees the interpreter's types and strings (1.5M instructions, over
        # half a millisecond), which the process's end frees as well. What
        # this cannot do as Py_FinalizeEx does is left to it (SystemExit).
        builtins = __import__('builtins')
        if 'threading' in sys.modules:
            sys.modules['threading']._shutdown()  # joins the non-daemon threads
        __import__('atexit')._run_exitfuncs()
        # A thread still running (a daemon) is stopped by Py_FinalizeEx
        # before the modules go; gc's callbacks and debug flags print there.
        if len(sys._current_frames()) > 1 or gc.callbacks or gc.get_debug() or gc.garbage:
            raise SystemExit(status)
        try:
            for f in (sys.stdout, sys.stderr):
                if f is not None and not f.closed:
                    f.flush()
        except BaseException:
            raise SystemExit(status)  # Python flushes again, says why, and exits 120
        gc.collect()
        # finalize_modules: the special names, then each module out of
        # sys.modules (freed if nothing else holds it), the builtins as they
        # were, the cycles, then the globals of the modules still alive, the
        # last imported first. The globals of the modules there before the
        # script are left (Python's own and the preloaded ones: 0.4 ms for a
        # bare start, far more with pandas): only what the script put in them
        # could see it.
        builtins._ = None
        for n in ('path', 'argv', 'ps1', 'ps2', 'last_type', 'last_value', 'last_traceback',
                  'path_hooks', 'path_importer_cache', 'meta_path', '__interactivehook__'):
            setattr(sys, n, None)
        for n in ('stdin', 'stdout', 'stderr'):
            setattr(sys, n, getattr(sys, '__%s__' % n, None))
        weak, mods, module = __import__('_weakref').ref, sys.modules, type(sys)
        alive = []
        for n, m in list(mods.items()):
            if isinstance(m, module):
                alive.append(weak(m))
            mods[n] = None
        n = m = None
        mods.clear()
        b = builtins.__dict__
        old = dict(b)
        b.clear()
        b.update(initial)
        old = b = None
        gc.collect()
        for r in reversed(alive):
            m = r()
            if m is None or m is sys or m is builtins:
                continue
            w = startup.get(id(m))
            if w is not None and w() is m:
                continue
            d = m.__dict__
            # _PyModule_ClearDict: the names of one underscore first.
            for k in [k for k in d if isinstance(k, str) and k[:1] == '_' and k[1:2] != '_']:
                d[k] = None
            for k in [k for k in d if isinstance(k, str) and k != '__builtins__']:
                d[k] = None
            m = d = w = None
        try:
            for f in (sys.__stdout__, sys.__stderr__):
                if f is not None and not f.closed:
                    f.flush()
        except BaseException:
            raise SystemExit(status)
        if sigint:
            # As a cold run ends at a KeyboardInterrupt: by SIGINT.
            signal(2, 0)
            kill(getpid(), 2)
        exit_(status & 0xff)
    preload_gc, initial, startup = preload()
    os.write(1, b'\0')
    g, src, name = main(request())
    del preload, take, request, unbuffered, main
    status, sigint = run(g, src, name)
    del g, src, name
    try:
        finish(status, sigint, preload_gc, initial, startup)  # it exits
    except SystemExit:
        if not sigint:
            raise  # to Python's own exit
    # A KeyboardInterrupt finish left to Python: flushed, then SIGINT.
    for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            s.flush()
        except BaseException:
            pass
    sys.modules['_signal'].signal(2, 0)
    os.kill(os.getpid(), 2)
_w()
)PY";

bool IsPython(const std::string& argv0) {
  return argv0 == "python3" || argv0 == "/usr/bin/python3" || argv0 == "python" ||
         argv0 == "/usr/bin/python";
}

// Read by Python or libc as the interpreter starts: a warm one started
// without them.
bool ReadAtStart(const std::string& key) {
  for (const char* prefix : {"PYTHON", "LD_", "LC_", "MALLOC_", "GLIBC_", "OPENBLAS", "OMP_",
                             "MKL_", "GOTO", "NUMPY", "PANDAS", "SENTRY"}) {
    if (absl::StartsWith(key, prefix)) return true;
  }
  for (const char* exact : {"LANG", "LANGUAGE", "HOME", "PATH", "TZ", "TERM", "USER", "TMPDIR"}) {
    if (key == exact) return true;
  }
  return false;
}

void Put(std::string* out, char tag, const std::string& value) {
  out->push_back(tag);
  uint32_t n = static_cast<uint32_t>(value.size());
  out->append(reinterpret_cast<const char*>(&n), sizeof(n));
  out->append(value);
}

}  // namespace

const char* WarmBootstrapSource() {
  static const std::string source = [] {
    std::string s = kBootstrap;
    s.replace(s.find("LIMIT"), 5, absl::StrCat(kMaxBootstrapRequest));
    return s;
  }();
  return source.c_str();
}

bool WarmPythonCanServe(const RunOptions& o, std::string* why) {
  const std::vector<std::string>& a = o.argv;
  if (!o.tools.empty()) {
    *why = "--tool needs a cold start (the channel and the module are made with the sandbox)";
    return false;
  }
  if (a.size() < 2 || !IsPython(a[0])) {
    *why = "a warm interpreter runs `python3 SCRIPT` or `python3 -c CODE` only";
    return false;
  }
  size_t i = a[1] == "-u" ? 2 : 1;  // -u: the bootstrap unbuffers stdout and stderr
  if (a.size() <= i || (a[i] == "-c" ? a.size() < i + 2 : (a[i].empty() || a[i][0] == '-'))) {
    *why = "python3 flags other than -c need a cold start";
    return false;
  }
  for (const std::string& kv : o.env) {
    std::string key = kv.substr(0, kv.find('='));
    if (ReadAtStart(key)) {
      *why = absl::StrCat("--env ", key, " is read as Python starts: a cold start");
      return false;
    }
  }
  return true;
}

std::string EncodeBootstrapRequest(const std::vector<std::string>& argv,
                                   const std::vector<std::string>& env, const std::string& cwd) {
  std::string body;
  for (const std::string& a : argv) Put(&body, 'a', a);
  for (const std::string& e : env) Put(&body, 'e', e);
  if (!cwd.empty()) Put(&body, 'd', cwd);
  uint32_t n = static_cast<uint32_t>(body.size());
  std::string out(reinterpret_cast<const char*>(&n), sizeof(n));
  return out + body;
}

}  // namespace sentry
