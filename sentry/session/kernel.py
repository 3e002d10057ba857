"""A session's kernel: the Python that lives in a sentry session's sandbox.

Run as `python3 -c SOURCE [--preload MOD,...]` (or as a file; sessions run
it through the loader of kernel_source.h, which compiles it one top-level
block at a time: blocks are separated by two blank lines). Requests come
as frames on fd 0, frames go out on fd 1: a 4-byte big-endian length, then
that many bytes of UTF-8 JSON, an object (the protocol is in
sentry/session/README.md). At start both fds move to private close-on-exec
fds; fd 0 becomes /dev/null, fd 1 and fd 2 become pipes whose readers turn
what child processes write there into stream frames.

The main thread runs cells (in one persistent __main__) and commands, one at
a time. The request reader serves interrupts at once and hands file requests
to a worker, so both work while a cell runs. SIGINT is blocked in the main
thread except while a cell runs: an interrupt then raises KeyboardInterrupt
in the cell and nowhere else.

A fork request makes copies of the kernel, each with this __main__
(sentry/session/FORK.md, step 6).

The kernel runs as the guest, so it is no wall: its bounds keep what it
writes within what the sentry accepts, and nothing more.
"""

import _ast  # not ast, nor base64 or traceback (imported at the first error): an idle
import binascii  # kernel's memory is mostly its modules
import builtins
import codecs
import io
import json
import linecache
import os
import queue
import select
import signal
import stat
import sys
import threading
import time
import types
import weakref

_G = globals()  # frames with these globals are the kernel's, left out of tracebacks
MAX_IN = 64 << 20  # a request frame
MAX_OUT = 16 << 20  # a frame the kernel writes
CHUNK = 64 << 10  # bytes of text in one stream frame
FLUSH_AFTER = 0.05  # seconds a Python-level write waits for more before it is framed
MAX_TEXT = 1 << 20  # characters of one text value in a MIME bundle
MAX_FILE = 12 << 20  # bytes one read_file returns (base64 fits in MAX_OUT)
MAX_ENTRIES = 10000  # entries one list_files returns
MAX_TB_LINES = 400
BACKEND = "_sentry_backend"  # the matplotlib backend module (registered, no file)
_SIGINT = {signal.SIGINT}


def _encode(msg):
    """The frame's JSON bytes; a frame past MAX_OUT (or not JSON) is slimmed."""
    why = None
    try:
        data = json.dumps(msg, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        data = data.encode("utf-8", "replace")  # lone surrogates become '?'
        if len(data) <= MAX_OUT:
            return data
        why = "%d bytes, past the %d a frame holds" % (len(data), MAX_OUT)
    except (TypeError, ValueError) as e:
        why = "not JSON: %s" % e
    op = msg.get("op")
    note = {"text/plain": "[output dropped: %s]" % why}
    slim = {k: msg[k] for k in ("op", "id", "status", "executionCount", "exitCode") if k in msg}
    if op == "display":
        slim["data"] = note
    elif op == "done":
        slim["result"] = note if msg.get("result") is not None else None
        err = msg.get("error")
        slim["error"] = err and {"name": str(err.get("name"))[:200],
                                 "value": str(err.get("value"))[:10000], "traceback": []}
    elif op in ("file", "files"):
        slim = {"op": "file_error", "id": msg.get("id"), "errno": 27, "message": why}  # EFBIG
    else:
        slim = {"op": "stream", "id": msg.get("id"), "name": "stderr", "text": why}
    return json.dumps(slim).encode()


class _Wire:
    """Frames in on rfd, out on wfd (whole frames, one writer at a time)."""

    def __init__(self, rfd, wfd):
        self.rfd, self.wfd = rfd, wfd
        self.lock = threading.Lock()

    def _take(self, n):
        b = bytearray()
        while len(b) < n:
            c = os.read(self.rfd, min(n - len(b), 1 << 20))
            if not c:
                return None
            b += c
        return bytes(b)

    def recv(self):
        """The next request's bytes (None at EOF, or at a length past MAX_IN:
        the stream cannot be followed past it)."""
        head = self._take(4)
        if head is None:
            return None
        n = int.from_bytes(head, "big")
        return self._take(n) if n <= MAX_IN else None

    def send(self, msg):
        data = _encode(msg)
        frame = len(data).to_bytes(4, "big") + data
        # A KeyboardInterrupt between two partial writes would cut a frame:
        # the main thread writes with SIGINT blocked (a pending one is raised
        # when the mask is restored, after the whole frame).
        main = threading.get_ident() == _MAIN
        if main:
            try:
                old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGINT)
            except KeyboardInterrupt:  # one caught before: raised, nothing sent
                signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGINT)
                raise
        try:
            with self.lock:
                _write_all(self.wfd, frame)
        finally:
            if main:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _send_text(name, text):
    """Stream frames of at most CHUNK bytes each, cut between characters."""
    data = text.encode("utf-8", "replace")
    i = 0
    while i < len(data):
        j = min(i + CHUNK, len(data))
        while i < j < len(data) and (data[j] & 0xC0) == 0x80:
            j -= 1
        WIRE.send({"op": "stream", "id": ST.id, "name": name,
                   "text": data[i:j].decode("utf-8", "replace")})
        i = j


class _Streams:
    """Python-level writes to stdout and stderr, framed in their order.

    Writes gather until the other stream is written, CHUNK bytes wait, a
    flush point (display, a child's output, the end of a request) or
    FLUSH_AFTER seconds pass (the ticker thread): one frame per print would
    cost more than the print."""

    def __init__(self):
        self.lock = threading.RLock()
        self.wake = threading.Condition(self.lock)
        self.name, self.parts, self.size, self.since = None, [], 0, 0.0

    def write(self, name, text):
        with self.lock:
            if name != self.name:
                self._flush()
                self.name = name
            if not self.parts:
                self.since = time.monotonic()
                self.wake.notify()
            self.parts.append(text)
            self.size += len(text)
            if self.size >= CHUNK:
                self._flush()

    def flush(self):
        with self.lock:
            self._flush()

    def _flush(self):
        if self.parts:
            text, self.parts, self.size = "".join(self.parts), [], 0
            _send_text(self.name, text)

    def ticker(self):
        with self.lock:
            while True:
                if not self.parts:
                    self.wake.wait()
                    continue
                late = self.since + FLUSH_AFTER - time.monotonic()
                if late > 0:
                    self.wake.wait(late)
                else:
                    try:
                        self._flush()
                    except OSError:
                        os._exit(0)  # the sentry is gone


class _Out(io.TextIOBase):
    """sys.stdout / sys.stderr: text to _Streams; fileno() is the fd-1/fd-2 pipe."""

    encoding, errors, line_buffering = "utf-8", "replace", False
    forked = False  # in a forked child (os.fork, multiprocessing): write to fd 1/2

    def __init__(self, name, fd):
        self._stream, self._fd, self._line = name, fd, ""
        self.buffer = _Bytes(self)

    @property
    def name(self):
        return "<%s>" % self._stream

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        if s and _Out.forked:  # line-buffered, so children's lines do not mix
            self._line += s
            if "\n" in self._line:
                self.flush()
        elif s:
            STREAMS.write(self._stream, s)
        return len(s)

    def writable(self):
        return True

    def flush(self):
        if not _Out.forked:
            STREAMS.flush()
        elif self._line:
            line, self._line = self._line, ""
            _write_all(self._fd, line.encode("utf-8", "replace"))

    def fileno(self):
        return self._fd

    def isatty(self):
        return False


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _forked_child():
    # Only the kernel writes frames: a forked child that goes on running
    # Python writes its output to fd 1/2 (read back by the kernel's pipes),
    # and never takes a lock another thread may have held at the fork.
    # A session fork's child is a kernel: _fork_child sets it up instead.
    if _SESSION_FORK:
        return
    _Out.forked = True
    STREAMS.parts = []
    for fd in (WIRE.rfd, WIRE.wfd):
        try:
            os.close(fd)
        except OSError:
            pass


class _Bytes(io.RawIOBase):
    """sys.stdout.buffer: bytes decoded as UTF-8 (undecodable bytes replaced)."""

    def __init__(self, out):
        self._out = out
        self._dec = codecs.getincrementaldecoder("utf-8")("replace")

    def writable(self):
        return True

    def write(self, b):
        self._out.write(self._dec.decode(bytes(b)))
        return len(b)

    def fileno(self):
        return self._out.fileno()



# The stack of each of the kernel's own threads (the pipes' readers, the
# ticker, the file worker, the reader): they run no cell. A forked kernel
# keeps its parent's threads' stacks mapped (a raw clone: glibc's fork would
# reclaim them), so a chain of forks adds its threads' stacks to the address
# space at each level, and without root the --memory wall is RLIMIT_AS
# (FORK.md, "A fork of a fork"): 2 MiB each, not the 8 MiB default.
_KERNEL_STACK = 2 << 20


def _kernel_thread(target, name):
    old = threading.stack_size(_KERNEL_STACK)
    try:
        threading.Thread(target=target, name=name, daemon=True).start()
    finally:
        threading.stack_size(old)


class _Pipe:
    """fd 1 or fd 2 of the kernel (so of its children): a pipe read into stream frames."""

    def __init__(self, name, fd):
        r, w = os.pipe()
        os.dup2(w, fd)  # the copy at fd is inheritable, r and w are not
        os.close(w)
        os.set_blocking(r, False)
        self.name, self.r = name, r
        self.cond = threading.Condition()
        self.read = self.sent = 0
        self.dead = False
        _kernel_thread(self._run, "sentry-" + name)

    def _run(self):
        try:
            self._loop()
        finally:  # the read end was closed under it (a cell may close any fd)
            with self.cond:
                self.dead = True
                self.cond.notify_all()

    def _loop(self):
        dec = codecs.getincrementaldecoder("utf-8")("replace")
        while True:
            select.select([self.r], [], [])
            with self.cond:
                try:
                    data = os.read(self.r, CHUNK)
                except BlockingIOError:
                    continue
                self.read += len(data)
                mark = self.read
            if not data:
                return  # every write end is closed
            text = dec.decode(data)
            if text:
                STREAMS.flush()
                _send_text(self.name, text)
            with self.cond:
                self.sent = mark
                self.cond.notify_all()

    def drain(self, timeout=2.0):
        """Waits until what was written before the call is framed."""
        import fcntl
        import termios
        with self.cond:
            try:
                waiting = int.from_bytes(fcntl.ioctl(self.r, termios.FIONREAD, bytes(4)), "little")
            except OSError:
                waiting = 0
            target = self.read + waiting
            self.cond.wait_for(lambda: self.sent >= target or self.dead, timeout)


class _State:
    """What the main thread runs; the lock orders interrupts with its end."""

    def __init__(self):
        self.lock = threading.Lock()
        self.id = None  # the request running, or the last one (stream frames carry it)
        self.running = None  # "cell", "command" or None
        self.proc = None
        self.interrupted = False
        self.count = 0  # cells run (executionCount)
        self.shown = weakref.WeakSet()  # figures emitted in this cell
        self.loop = None  # the event loop of top-level await


def _interrupt():
    with ST.lock:
        if ST.running == "cell":
            signal.pthread_kill(_MAIN, signal.SIGINT)
        elif ST.running == "command":
            ST.interrupted = True
            if ST.proc is not None:
                _killpg(ST.proc.pid)


def _killpg(pid):
    try:
        os.killpg(pid, signal.SIGINT)
    except OSError:
        pass


def _begin(kind, rid):
    with ST.lock:
        ST.running, ST.id, ST.interrupted = kind, rid, False
    if kind == "cell":
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGINT)


def _end():
    # Blocking runs the handler of a SIGINT already caught; one sent before
    # the lock below is taken is still pending, and taken here.
    while True:
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, _SIGINT)
            with ST.lock:
                ST.running, ST.proc = None, None
            while signal.sigtimedwait(_SIGINT, 0) is not None:
                pass
            return
        except KeyboardInterrupt:
            pass


def _flush_out():
    STREAMS.flush()
    for p in PIPES:
        p.drain()


# --- cells -------------------------------------------------------------------


def _run_cell(rid, code):
    ST.count += 1
    n = ST.count
    result = error = None
    _begin("cell", rid)
    try:
        try:
            result = _execute(code, n)
        except BaseException as e:
            error = e
        try:
            _flush_figures()
        except BaseException as e:
            if error is None:
                error = e
    except BaseException as e:  # a KeyboardInterrupt in the handlers above
        if error is None:
            error = e
    finally:
        _end()
    err = None
    if error is not None:
        err = _error(error)
        sys.last_type, sys.last_value, sys.last_traceback = type(error), error, error.__traceback__
    _flush_out()
    WIRE.send({"op": "done", "id": rid, "status": "ok" if err is None else "error",
               "executionCount": n, "result": result, "error": err, "exitCode": None})


def _execute(code, n):
    """Runs code in __main__ as IPython does: the last expression is the result."""
    if not isinstance(code, str):
        raise TypeError("code must be a string")
    name = "<cell %d>" % n
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    linecache.cache.pop("<cell %d>" % (n - 1000), None)
    try:
        tree = compile(code, name, "exec", _ast.PyCF_ONLY_AST)  # ast.parse
    except SyntaxError as e:
        raise e.with_traceback(None)
    last = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr) and not code.rstrip().endswith(";"):
        last = _ast.Expression(tree.body.pop().value)
    ns = MAIN.__dict__
    if tree.body:
        _eval(compile(tree, name, "exec", _ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), ns)
    if last is None:
        return None
    value = _eval(compile(last, name, "eval", _ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), ns)
    if value is None:
        return None
    ns["___"], ns["__"], ns["_"] = ns.get("__"), ns.get("_"), value
    return _bundle(value)


def _eval(code, ns):
    if code.co_flags & 0x80:  # CO_COROUTINE: a cell with top-level await
        if ST.loop is None:
            import asyncio
            ST.loop = asyncio.new_event_loop()
        return ST.loop.run_until_complete(eval(code, ns))
    return eval(code, ns)


def _error(exc):
    """{name, value, traceback} of exc, without the kernel's frames."""
    _strip(exc)
    try:
        value = str(exc)
    except BaseException:
        value = "<unprintable %s>" % type(exc).__name__
    try:
        import traceback
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except BaseException:
        text = "%s: %s" % (type(exc).__name__, value)
    lines = [ln if len(ln) <= 4096 else ln[:4096] + "..." for ln in text.splitlines()]
    if len(lines) > MAX_TB_LINES:
        cut = len(lines) - MAX_TB_LINES
        lines = lines[:100] + ["[... %d lines ...]" % cut] + lines[100 + cut:]
    return {"name": type(exc).__name__, "value": _clip(value), "traceback": lines}


def _strip(exc):
    seen, todo = set(), [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        keep, tb = [], e.__traceback__
        while tb is not None:
            if tb.tb_frame.f_globals is not _G:
                keep.append(tb)
            tb = tb.tb_next
        new = None
        for tb in reversed(keep):
            new = types.TracebackType(new, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
        e.__traceback__ = new
        todo += [e.__cause__, e.__context__]


def _b64(data):
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def _clip(text, limit=MAX_TEXT):
    if len(text) <= limit:
        return text
    return text[:limit] + "\n[... %d more characters]" % (len(text) - limit)


# --- rich results (IPython's formatters) -------------------------------------

_REPRS = (("text/html", "_repr_html_"), ("text/markdown", "_repr_markdown_"),
          ("text/latex", "_repr_latex_"), ("image/svg+xml", "_repr_svg_"),
          ("image/png", "_repr_png_"), ("image/jpeg", "_repr_jpeg_"),
          ("application/json", "_repr_json_"))


def _method(obj, name):
    # As IPython: no lookup on classes, nor on objects that answer any name.
    if isinstance(obj, type):
        return None
    try:
        if hasattr(obj, "_ipython_canary_method_should_not_exist_"):
            return None
        m = getattr(obj, name, None)
    except Exception:
        return None
    return m if callable(m) else None


def _mime_value(mime, v):
    if isinstance(v, tuple) and len(v) == 2:
        v = v[0]  # (data, metadata)
    if isinstance(v, (bytes, bytearray)):
        if mime.startswith("image/") and mime != "image/svg+xml":
            return _b64(v)
        v = bytes(v).decode("utf-8", "replace")
    if isinstance(v, str):
        return _clip(v)
    if mime != "application/json":
        return None
    try:
        json.dumps(v, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return v


def _bundle(obj):
    """The MIME bundle IPython would show for obj."""
    if _is_figure(obj):
        return _figure_bundle(obj)
    data = {}
    m = _method(obj, "_repr_mimebundle_")
    if m is not None:
        got = _try_repr(m, include=None, exclude=None)
        if isinstance(got, tuple):
            got = got[0]
        if isinstance(got, dict):
            for mime, v in got.items():
                v = _mime_value(mime, v) if isinstance(mime, str) else None
                if v is not None:
                    data[mime] = v
    for mime, attr in _REPRS:
        m = None if mime in data else _method(obj, attr)
        if m is not None:
            v = _mime_value(mime, _try_repr(m))
            if v is not None:
                data[mime] = v
    if "text/plain" not in data:
        data["text/plain"] = _clip(_plain(obj))
    return data


def _try_repr(m, **kw):
    # A formatter that fails is skipped with a warning, as IPython does.
    try:
        return m(**kw)
    except Exception as e:
        sys.stderr.write("%s failed: %s: %s\n" % (getattr(m, "__name__", "repr"),
                                                   type(e).__name__, e))
        return None


def _plain(obj):
    if isinstance(obj, (list, tuple, dict, set, frozenset)) and len(obj) <= 1000:
        import pprint
        return pprint.pformat(obj, width=79, sort_dicts=False)
    return repr(obj)


def display(*objs, raw=False, **_):
    """Shows each object as a rich result (IPython's display)."""
    for obj in objs:
        data = obj if raw and isinstance(obj, dict) else _bundle(obj)
        _emit(data)


def _input(prompt="", _original=builtins.input):
    """input(): the original, unless stdin is still the kernel's /dev/null."""
    if sys.stdin is not None and sys.stdin is sys.__stdin__:
        raise EOFError("input(): a session's stdin is empty (/dev/null): give the data in a "
                       "file or a variable")
    return _original(prompt)


def _emit(data):
    if _Out.forked:
        sys.stdout.write(str(data.get("text/plain", "")) + "\n")
        return
    STREAMS.flush()
    WIRE.send({"op": "display", "id": ST.id, "data": data})


# --- matplotlib --------------------------------------------------------------


def _is_figure(obj):
    mod = sys.modules.get("matplotlib.figure")
    return mod is not None and isinstance(obj, mod.Figure)


def _figure_bundle(fig):
    ST.shown.add(fig)
    data = {"text/plain": repr(fig)}
    if fig.axes or fig.lines or fig.images or fig.texts or fig.patches:
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        data["image/png"] = _b64(buf.getvalue())
    return data


def _open_figures():
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is None:
        return []
    return [m.canvas.figure for m in helpers.Gcf.get_all_fig_managers()]


def _flush_figures():
    """At a cell's end: each open figure not yet emitted is emitted, all are closed."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    try:
        for fig in _open_figures():
            if fig not in ST.shown:
                _emit(_figure_bundle(fig))
    finally:
        ST.shown.clear()
        pyplot.close("all")


def _show(*args, **kwargs):
    """plt.show(): emits every open figure, then closes them (as matplotlib-inline)."""
    try:
        for fig in _open_figures():
            _emit(_figure_bundle(fig))
    finally:
        ST.shown.clear()
        sys.modules["matplotlib.pyplot"].close("all")


class _MplHook:
    """Points matplotlib at BACKEND (Agg whose show() emits) once it is imported.

    MPLBACKEND stays Agg for child processes; the backend module has no file,
    so only this process can name it."""

    def __init__(self):
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        import importlib.util
        if name == BACKEND:
            return importlib.util.spec_from_loader(name, self)
        if name != "matplotlib" or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            if os.environ.get("MPLBACKEND", "agg").lower() == "agg":
                module.rcParams["backend"] = "module://" + BACKEND

        spec.loader.exec_module = exec_module  # the loader is this spec's own
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        from matplotlib.backend_bases import FigureManagerBase
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        module.FigureCanvas, module.FigureManager, module.show = FigureCanvasAgg, FigureManagerBase, _show


# --- commands ----------------------------------------------------------------


def _run_command(rid, msg):
    import subprocess
    argv, script = msg.get("argv"), msg.get("bash")
    if script is not None:
        argv = ["/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh", "-c", script]
    code, err = None, None
    _begin("command", rid)
    try:
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
            raise TypeError("a command is a non-empty argv list of strings, or bash")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, process_group=0,
                                preexec_fn=_child_mask)
        with ST.lock:
            ST.proc = proc
            if ST.interrupted:
                _killpg(proc.pid)
        rc = proc.wait()
        code = rc if rc >= 0 else 128 - rc
        if code != 0:
            err = {"name": "ExitStatus", "value": "exit status %d" % code, "traceback": []}
    except (OSError, ValueError, TypeError) as e:
        code = 126 if isinstance(e, PermissionError) else 127
        err = {"name": type(e).__name__, "value": str(e), "traceback": []}
    finally:
        _end()
    _flush_out()
    WIRE.send({"op": "done", "id": rid, "status": "ok" if err is None else "error",
               "executionCount": ST.count, "result": None, "error": err, "exitCode": code})


def _child_mask():
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


# --- files (a worker thread, so they are served while a cell runs) ------------


def _files_worker():
    while True:
        msg = FILES.get()
        rid = msg.get("id")
        try:
            reply = _FILE_OPS[msg["op"]](msg)
        except OSError as e:
            reply = {"op": "file_error", "errno": e.errno or 5, "message": e.strerror or str(e)}
        except (ValueError, TypeError, OverflowError) as e:
            reply = {"op": "file_error", "errno": 22, "message": str(e)}  # EINVAL
        except Exception as e:
            reply = {"op": "file_error", "errno": 5, "message": "%s: %s" % (type(e).__name__, e)}
        reply["id"] = rid
        try:
            WIRE.send(reply)
        except OSError:
            os._exit(0)


def _arg(msg, key, default=None):
    v = msg.get(key, default)
    if not isinstance(v, str) or not v or "\0" in v:
        raise ValueError("%s must be a non-empty string" % key)
    return v


def _int(msg, key, default):
    v = msg.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise ValueError("%s must be a non-negative integer" % key)
    return v


def _regular(fd, path):
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "Is a directory", path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(22, "not a regular file", path)
    return st


def _read_file(msg):
    """Bytes of a regular file (offset/length page through one past MAX_FILE)."""
    path = _arg(msg, "path")
    offset = _int(msg, "offset", 0)
    length = _int(msg, "length", MAX_FILE)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = _regular(fd, path)
        if "length" not in msg and st.st_size - offset > MAX_FILE:
            raise OSError(27, "%d bytes, past the %d one read returns (page with offset and "
                          "length)" % (st.st_size, MAX_FILE))
        want, parts = min(length, MAX_FILE), []
        while want > 0:
            b = os.pread(fd, min(want, 1 << 20), offset)
            if not b:
                break
            parts.append(b)
            offset += len(b)
            want -= len(b)
    finally:
        os.close(fd)
    return {"op": "file", "data": _b64(b"".join(parts)), "size": st.st_size}


def _write_file(msg):
    """Writes (or, with append, appends) the bytes; parent directories are made."""
    path = _arg(msg, "path")
    data = binascii.a2b_base64(msg.get("data") or "", strict_mode=True)
    mode = _int(msg, "mode", 0o644) & 0o7777  # applied when given, or to a new file
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    flags |= os.O_APPEND if msg.get("append") else os.O_TRUNC
    fd = os.open(path, flags, mode)
    try:
        _regular(fd, path)
        if "mode" in msg:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    return {"op": "file", "data": "", "size": size}


def _kind(mode):
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    return "symlink" if stat.S_ISLNK(mode) else "other"


def _list_files(msg):
    """Entries under dir: its children, every descendant (recursive), or a glob's matches."""
    top = _arg(msg, "dir", ".")
    recursive, pattern = bool(msg.get("recursive")), msg.get("glob")
    if not stat.S_ISDIR(os.stat(top).st_mode):
        raise NotADirectoryError(20, "Not a directory", top)
    if pattern:  # "" and null: no glob
        import glob
        names = glob.iglob(_arg(msg, "glob"), root_dir=top, recursive=recursive)
    elif recursive:
        names = _walk(top)
    else:
        names = (e.name for e in os.scandir(top))
    entries, budget, truncated = [], 8 << 20, False
    for rel in names:
        if len(entries) >= MAX_ENTRIES or budget <= 0:
            truncated = True
            break
        try:
            st = os.lstat(os.path.join(top, rel))
        except OSError:
            continue
        entries.append({"path": rel, "type": _kind(st.st_mode), "size": st.st_size})
        budget -= len(rel) + 40
    entries.sort(key=lambda e: e["path"])
    return {"op": "files", "entries": entries, "truncated": truncated}


def _walk(top):
    for root, dirs, files in os.walk(top):
        rel = os.path.relpath(root, top)
        for name in sorted(dirs) + sorted(files):
            yield name if rel == "." else os.path.join(rel, name)


_FILE_OPS = {"read_file": _read_file, "write_file": _write_file, "list_files": _list_files}


# --- fork: N copies of this kernel (sentry/session/FORK.md, step 6) ----------

# kForkCloneFlags of syscalls/fork_gate.h (NEWUSER|NEWPID|NEWNET|NEWIPC|NEWUTS|
# NEWNS|SIGCHLD): the one clone the sandbox's fork gate lets run, when granted.
# kernel_source_test checks that these numbers are the sentry's.
FORK_CLONE_FLAGS = 0x7C020011
MAX_FORKS = 100  # children of one fork request
BPF_MAXINSNS = 4096  # the re-listen's program buffer: the supervisor writes its own there
SYS_CLONE = 56  # x86_64
SYS_SECCOMP = 317
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 8
_FORK_TEST = None  # see _start
_SESSION_FORK = False  # in _fork: the kernel's own at-fork hook stands aside
FORKED = set()  # children of earlier forks, reaped when they end
_KEPT = []  # what a child must never close (it shares the parent's descriptions)
_TCB = {}  # made once: "tid" (glibc's tid field), "syscall", "clone" (and its "page")
_BLAS = {"modules": -1, "calls": []}  # OpenBLAS's fork handlers, found when sys.modules grew
# The names OpenBLAS's pthread_atfork handler is exported under (plain, and
# with the 64_ suffix and scipy_ prefix of the numpy and scipy wheels' builds).
BLAS_SHUTDOWN = ("blas_thread_shutdown_", "blas_thread_shutdown_64_",
                 "scipy_blas_thread_shutdown_", "scipy_blas_thread_shutdown_64_")


def _fork_refusal(msg):
    """Why a fork cannot run now, or None (the reader's check: between cells only)."""
    n = msg.get("count", 1)
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_FORKS:
        return "count must be an integer from 1 to %d, not %r" % (MAX_FORKS, n)
    with ST.lock:
        running = ST.running
    if running is not None:
        return "a %s is running: a fork is made between cells only (wait for its done)" % running
    if not JOBS.empty():
        return "a request waits to run: a fork is made between cells only"
    if os.uname().machine != "x86_64":
        return "fork is made on x86_64 only"
    return None


def _fork(rid, count):
    """count children of this kernel (clone with the fork gate's flags), then
    the parent's re-listen. In the parent: done with the children's pids (as
    it names them), or an error done with no child left. In each child: the
    kernel again, its `forked` frame first."""
    global _SESSION_FORK
    _flush_out()
    with ST.lock:
        ST.running, ST.id = "fork", rid
    try:
        import ctypes
        sc = _TCB.get("syscall")
        if sc is None:
            sc = ctypes.PyDLL(None, use_errno=True).syscall  # PyDLL: the GIL stays held
            sc.restype = ctypes.c_long
            _TCB["syscall"] = sc
        clone = _clone_then(ctypes)
        off = _tcb_tid_offset(ctypes)
        for shutdown in _blas_shutdowns(ctypes):
            shutdown()
    except Exception as e:
        _end()
        _error_done(rid, "ForkError", "%s: %s" % (type(e).__name__, e))
        return
    py, pids, why = ctypes.pythonapi, [], None
    after_child = ctypes.cast(py.PyOS_AfterFork_Child, ctypes.c_void_p)
    _SESSION_FORK = True
    py.PyOS_BeforeFork()
    for _ in range(count):
        pid = clone(FORK_CLONE_FLAGS, after_child)
        if pid == 0:  # PyOS_AfterFork_Child has run
            _SESSION_FORK = False
            try:
                _fork_child(rid, off, ctypes)
            except BaseException:  # never a half-made kernel
                os._exit(70)
            return
        if pid < 0:
            why = "clone: %s" % os.strerror(-pid)
            if pid == -1:  # EPERM
                why += " (the sandbox's supervisor granted no fork: forks come through the server)"
            break
        pids.append(pid)
    py.PyOS_AfterFork_Parent()
    _SESSION_FORK = False
    if why is None:
        why = _relisten(sc, ctypes)
    _end()
    if why is not None:
        _discard(pids)
        if pids:
            made = "1 child" if len(pids) == 1 else "%d children" % len(pids)
            why += " (%s made before it, killed)" % made
        _error_done(rid, "ForkError", why)
        return
    FORKED.update(pids)
    WIRE.send({"op": "done", "id": rid, "status": "ok", "executionCount": ST.count, "result": None,
               "error": None, "exitCode": None, "children": pids})


def _relisten(sc, ctypes):
    """The parent's new listener, taken by its supervisor (FORK.md, step 2):
    seccomp(NEW_LISTENER) with room for BPF_MAXINSNS instructions, where the
    supervisor writes its own program; the call returns 0 to the kernel."""
    if _FORK_TEST:  # no supervisor (a native test): nothing to re-listen to
        return None

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    insns = (ctypes.c_uint64 * BPF_MAXINSNS)()  # struct sock_filter is 8 bytes
    prog = SockFprog(BPF_MAXINSNS, ctypes.addressof(insns))
    r = sc(ctypes.c_long(SYS_SECCOMP), ctypes.c_long(SECCOMP_SET_MODE_FILTER),
           ctypes.c_long(SECCOMP_FILTER_FLAG_NEW_LISTENER), ctypes.byref(prog))
    if r < 0:
        return ("re-listen (seccomp NEW_LISTENER): %s (only a sentry sandbox's supervisor "
                "completes it)" % os.strerror(ctypes.get_errno()))
    if r > 0:  # a listener in the kernel's hands: no supervisor took it
        os.close(r)
        return "re-listen: no supervisor took the new listener"
    return None


def _discard(pids):
    """Kills the children of a failed fork and reaps them (at most ~2 s)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    FORKED.update(pids)
    end = time.monotonic() + 2
    while FORKED and time.monotonic() < end:
        _reap_forked()
        if FORKED:
            time.sleep(0.005)


def _reap_forked():
    for pid in list(FORKED):
        try:
            done = os.waitpid(pid, os.WNOHANG)[0] == pid
        except ChildProcessError:
            done = True
        if done:
            FORKED.discard(pid)


def _blas_shutdowns(ctypes):
    """OpenBLAS's pthread_atfork handler of each OpenBLAS loaded: it stops
    the library's thread pool, which each process then starts again at its
    next call. A raw clone runs no pthread_atfork handler, and a child
    would otherwise wait for the parent's pool threads at its first
    threaded BLAS call, forever. Looked for again when sys.modules grew."""
    if "numpy" not in sys.modules or _BLAS["modules"] == len(sys.modules):
        return _BLAS["calls"]
    calls, seen, paths = [], set(), set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and "blas" in parts[5].rsplit("/", 1)[-1]:
                    paths.add(parts[5].rstrip("\n"))
    except OSError:
        pass
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:
            continue
        for name in BLAS_SHUTDOWN:
            try:
                fn = getattr(lib, name)
            except AttributeError:
                continue
            addr = ctypes.cast(fn, ctypes.c_void_p).value
            if addr not in seen:
                seen.add(addr)
                calls.append(fn)
            break
    _BLAS["modules"], _BLAS["calls"] = len(sys.modules), calls
    return calls


def _clone_then(ctypes):
    """clone(flags, 0, 0, 0, 0), then in the child PyOS_AfterFork_Child()
    before any bytecode: a function of 24 bytes of x86-64, made once.

    Through ctypes' syscall the child would return to the eval loop first,
    whose check after a call gives the GIL away when another thread asked
    for it (a thread waiting since before the clone): in the child nobody
    takes it, and it waits forever (seen with busy threads and a 100 MB
    process, a few children in a hundred). os.fork calls the hook from C
    for that reason; PyOS_AfterFork_Child recreates the GIL and clears the
    request. Returns the child's pid, 0 in the child, or -errno. Called
    with the GIL held (PYFUNCTYPE)."""
    fn = _TCB.get("clone")
    if fn is None:
        import mmap
        code = (b"\x53"  # push rbx
                b"\x48\x89\xf3"  # mov rbx, rsi: the child's hook
                + b"\xb8" + SYS_CLONE.to_bytes(4, "little") +  # mov eax, SYS_clone (flags: rdi)
                b"\x31\xf6\x31\xd2\x4d\x31\xd2\x4d\x31\xc0"  # rsi, rdx, r10, r8 = 0
                b"\x0f\x05"  # syscall
                b"\x48\x85\xc0\x75\x04"  # test rax, rax; jnz out
                b"\xff\xd3\x31\xc0"  # call rbx; xor eax, eax
                b"\x5b\xc3")  # out: pop rbx; ret
        # Private: a shared page would be one parent and children could
        # make writable again (a fork refuses any such mapping).
        page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                         prot=mmap.PROT_READ | mmap.PROT_WRITE)
        page.write(code)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(page))
        mprotect = ctypes.CDLL(None, use_errno=True).mprotect
        mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        if mprotect(addr, mmap.PAGESIZE, mmap.PROT_READ | mmap.PROT_EXEC) != 0:
            raise OSError(ctypes.get_errno(), "mprotect of the clone function")
        fn = ctypes.PYFUNCTYPE(ctypes.c_long, ctypes.c_ulong, ctypes.c_void_p)(addr)
        _TCB["clone"], _TCB["page"] = fn, page
    return fn


def _tcb_tid_offset(ctypes):
    """Where glibc keeps a thread's tid in its descriptor (pthread_self()).

    A raw clone leaves the parent's tid there (glibc's fork writes the
    child's), and pthread_kill (the interrupt, among others) names the main
    thread by it. Found once: the one offset at which two threads'
    descriptors hold their own tids."""
    if "tid" not in _TCB:
        seen, ready, leave = {}, threading.Event(), threading.Event()

        def other():
            seen["pd"], seen["tid"] = threading.get_ident(), threading.get_native_id()
            ready.set()
            leave.wait()

        t = threading.Thread(target=other, name="sentry-probe", daemon=True)
        t.start()
        ready.wait()
        try:
            main, tid = threading.get_ident(), threading.get_native_id()
            found = [off for off in range(0, 1024, 4)
                     if ctypes.c_int32.from_address(main + off).value == tid
                     and ctypes.c_int32.from_address(seen["pd"] + off).value == seen["tid"]]
        finally:
            leave.set()
            t.join()
        if len(found) != 1:
            raise OSError("glibc's thread id field not found (%d candidates)" % len(found))
        _TCB["tid"] = found[0]
    return _TCB["tid"]


def _fork_child(rid, off, ctypes):
    """The child, right after PyOS_AfterFork_Child: the parent's threads are
    gone (their locks may be held) and fd 1/2 are the parent's pipes. Its
    supervisor has made its request and frame fds its own (natively, the
    test's socket stands in). New locks, queues, pipes and threads; new
    entropy; then `forked`, and it serves requests with the parent's __main__."""
    global WIRE, STREAMS, PIPES, ST, JOBS, FILES
    ctypes.c_int32.from_address(_MAIN + off).value = threading.get_native_id()
    if _FORK_TEST:
        import socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(_FORK_TEST)
        os.dup2(s.fileno(), WIRE.rfd, inheritable=False)
        os.dup2(s.fileno(), WIRE.wfd, inheritable=False)
        s.close()
    WIRE = _Wire(WIRE.rfd, WIRE.wfd)
    null = os.open(os.devnull, os.O_RDONLY)  # fd 0 as at the start (S2 may put a pipe there)
    os.dup2(null, 0)
    os.close(null)
    old = ST
    ST, STREAMS, JOBS, FILES = _State(), _Streams(), queue.Queue(), queue.Queue()
    ST.count, ST.id = old.count, rid
    if old.loop is not None:  # its epoll and self-pipe are the parent's: never closed here
        _KEPT.append(old.loop)
    FORKED.clear()  # the parent's
    for p in PIPES:
        if not p.dead:  # else a cell closed it, and the number may be another file's now
            os.close(p.r)
    PIPES = [_Pipe("stdout", 1), _Pipe("stderr", 2)]
    failed = _reseed()
    for target in (STREAMS.ticker, _files_worker, _reader):
        _kernel_thread(target, "sentry-kernel")
    WIRE.send({"op": "forked", "id": rid, "role": "child", "pid": os.getpid()})
    for why in failed:
        STREAMS.write("stderr", "fork: %s\n" % why)


def _reseed():
    """New entropy where the interpreter and common modules cached some, so
    no two children draw the same values. str/bytes hashes keep the parent's
    seed (every dict and set in memory depends on it); objects a cell made
    (a random.Random, a numpy Generator) keep their state, as under os.fork."""
    failed, m = [], sys.modules
    steps = [("random", lambda r: r.seed(os.urandom(32))),
             ("numpy.random", lambda r: r.seed()),  # the global RandomState, from OS entropy
             ("tempfile", lambda t: setattr(t, "_name_sequence", None)),
             # libuuid's uuid1 state (clock sequence, node) is the parent's:
             # uuid1 takes its clock sequence from `random` instead
             ("uuid", lambda u: setattr(u, "_generate_time_safe", None)),
             ("multiprocessing.process",
              lambda p: setattr(p.current_process(), "authkey", os.urandom(32))),
             ("ssl", lambda s: s.RAND_add(os.urandom(48), 48.0))]  # OpenSSL's DRBG
    for name, step in steps:
        mod = m.get(name)
        if mod is not None:
            try:
                step(mod)
            except Exception as e:
                failed.append("reseeding %s failed: %s: %s" % (name, type(e).__name__, e))
    return failed


# --- the loops ---------------------------------------------------------------


def _reader():
    while True:
        try:
            body = WIRE.recv()
        except OSError:
            body = None
        if body is None:
            _quit(0)
        try:
            msg = json.loads(body)
        except Exception:  # not JSON, or nested past the parser's depth
            continue
        if not isinstance(msg, dict):
            continue
        op = msg.get("op")
        if op in ("cell", "command"):
            JOBS.put(msg)
        elif op == "interrupt":
            _interrupt()
        elif op in _FILE_OPS:
            FILES.put(msg)
        elif op == "exit":
            _quit(0)
        elif op == "fork":
            why = _fork_refusal(msg)
            if why is None:
                JOBS.put(msg)
            else:
                _error_done(msg.get("id"), "ForkError", why)
        elif "id" in msg:
            _error_done(msg.get("id"), "ProtocolError", "unknown op %r" % (op,)[:200])


def _error_done(rid, name, value):
    WIRE.send({"op": "done", "id": rid, "status": "error", "executionCount": ST.count,
               "result": None, "exitCode": None,
               "error": {"name": name, "value": value, "traceback": []}})


def _quit(status):
    try:
        STREAMS.flush()
    except OSError:
        pass
    os._exit(status)


def _main_loop():
    while True:
        msg = JOBS.get()
        try:
            if msg["op"] == "cell":
                _run_cell(msg.get("id"), msg.get("code"))
            elif msg["op"] == "fork":
                _fork(msg.get("id"), msg.get("count", 1))
            else:
                _run_command(msg.get("id"), msg)
        except KeyboardInterrupt:
            pass
        except OSError:
            _quit(0)  # the frames' fd is gone
        except Exception as e:  # the kernel's own fault: the request fails, the kernel stays
            import traceback
            _end()
            WIRE.send({"op": "done", "id": msg.get("id"), "status": "error",
                       "executionCount": ST.count, "result": None, "exitCode": None,
                       "error": {"name": "KernelError", "value": "%s: %s" % (type(e).__name__, e),
                                 "traceback": traceback.format_exc().splitlines()}})
        if FORKED:
            _reap_forked()


def _start():
    global WIRE, STREAMS, PIPES, ST, JOBS, FILES, MAIN, _MAIN, _FORK_TEST
    _MAIN = threading.get_ident()
    # Set only by tests that run the kernel natively (no sentry, so no
    # supervisor): a fork skips the re-listen, and each child takes this unix
    # socket as its request and frame fds, as a child's supervisor gives it
    # its own pipes. No wall rests on it: the guest can make these calls itself.
    _FORK_TEST = os.environ.pop("SENTRY_KERNEL_FORK_TEST_SOCKET", None)
    # The server's (session_manager.cc), read by glibc at the start; not the
    # cells' to inherit.
    os.environ.pop("MALLOC_ARENA_MAX", None)
    preload = []
    args = sys.argv[1:]
    if "--preload" in args[:-1]:
        preload = [m for m in args[args.index("--preload") + 1].split(",") if m]
    # SIGINT is blocked before any thread starts: the kernel's threads never
    # take it, and the main thread takes it only while a cell runs.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_BLOCK, _SIGINT)
    WIRE = _Wire(os.dup(0), os.dup(1))  # os.dup's copies are close-on-exec
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    ST, STREAMS, JOBS, FILES = _State(), _Streams(), queue.Queue(), queue.Queue()
    PIPES = [_Pipe("stdout", 1), _Pipe("stderr", 2)]
    sys.stdout, sys.stderr = _Out("stdout", 1), _Out("stderr", 2)
    for f in (sys.__stdout__, sys.__stderr__):
        if f is not None:
            f.reconfigure(line_buffering=True)
    os.register_at_fork(before=STREAMS.flush, after_in_child=_forked_child)
    os.environ["MPLBACKEND"] = "Agg"
    sys.meta_path.insert(0, _MplHook())
    MAIN = types.ModuleType("__main__")
    MAIN.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = MAIN
    builtins.display, builtins.input = display, _input
    sys.argv = [""]
    for target in (STREAMS.ticker, _files_worker, _reader):
        _kernel_thread(target, "sentry-kernel")
    try:
        for m in preload:
            __import__(m)
    except BaseException:
        import traceback
        STREAMS.write("stderr", traceback.format_exc())
        _quit(3)
    v = sys.version_info
    WIRE.send({"op": "ready", "python": "%d.%d.%d" % v[:3], "pid": os.getpid()})
    _main_loop()


if __name__ == "__main__":
    _start()
