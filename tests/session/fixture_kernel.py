# A small session kernel for the sentry side's tests (the frames of
# /work/shared/SESSIONS.md: cells, commands, interrupt, files), used with
# `sentry serve --session-kernel` where a test needs a kernel of its own.
import ast, base64, fnmatch, json, os, queue, signal, struct, subprocess, sys, threading, traceback

REQ = os.dup(0)
OUT = os.dup(1)
null = os.open("/dev/null", os.O_RDWR)
os.dup2(null, 0)
os.dup2(null, 1)
os.dup2(null, 2)
lock = threading.Lock()


def send(obj):
    data = json.dumps(obj).encode()
    data = struct.pack(">I", len(data)) + data
    with lock:
        while data:
            data = data[os.write(OUT, data):]


current = [0]


class Stream:
    def __init__(self, name):
        self.name = name

    def write(self, s):
        if s:
            send({"op": "stream", "id": current[0], "name": self.name, "text": s})
        return len(s)

    def flush(self):
        pass


sys.stdout = Stream("stdout")
sys.stderr = Stream("stderr")
jobs = queue.Queue()
busy = [False]
main = threading.main_thread().ident


def read_exact(n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(REQ, n - len(buf))
        if not chunk:
            os._exit(0)
        buf += chunk
    return buf


def files(req):
    op, rid = req["op"], req["id"]
    try:
        if op == "read_file":
            with open(req["path"], "rb") as f:
                send({"op": "file", "id": rid, "data": base64.b64encode(f.read()).decode()})
        elif op == "write_file":
            os.makedirs(os.path.dirname(req["path"]), exist_ok=True)
            with open(req["path"], "wb") as f:
                f.write(base64.b64decode(req["data"]))
            send({"op": "file", "id": rid, "data": ""})
        else:
            top, out = req["dir"], []
            for root, dirs, names in os.walk(top):
                for n in dirs + names:
                    p = os.path.join(root, n)
                    rel = os.path.relpath(p, top)
                    if req.get("glob") and not fnmatch.fnmatch(rel, req["glob"]):
                        continue
                    out.append({"path": rel, "type": "dir" if os.path.isdir(p) else "file",
                                "size": os.path.getsize(p)})
                if not req.get("recursive") and not req.get("glob"):
                    break
            send({"op": "files", "id": rid, "entries": out})
    except OSError as e:
        send({"op": "file_error", "id": rid, "errno": e.errno or 0, "message": str(e)})


def reader():
    while True:
        (n,) = struct.unpack(">I", read_exact(4))
        req = json.loads(read_exact(n))
        op = req["op"]
        if op in ("cell", "command"):
            jobs.put(req)
        elif op == "interrupt":
            if busy[0]:
                signal.pthread_kill(main, signal.SIGINT)
        elif op == "exit":
            os._exit(0)
        else:
            files(req)


threading.Thread(target=reader, daemon=True).start()
g = {"__name__": "__main__"}
count = 0
send({"op": "ready", "python": sys.version.split()[0], "pid": os.getpid()})
while True:
    req = jobs.get()
    current[0] = req["id"]
    busy[0] = True
    done = {"op": "done", "id": req["id"], "status": "ok", "result": None, "error": None,
            "exitCode": None}
    try:
        if req["op"] == "cell":
            count += 1
            tree = ast.parse(req["code"], "<cell %d>" % count)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, "<cell %d>" % count, "exec"), g)
            if last is not None:
                v = eval(compile(ast.Expression(last.value), "<cell %d>" % count, "eval"), g)
                if v is not None:
                    done["result"] = {"text/plain": repr(v)}
        else:
            argv = req["argv"] if "argv" in req else ["bash", "-c", req["bash"]]
            p = subprocess.run(argv, capture_output=True)
            sys.stdout.write(p.stdout.decode(errors="replace"))
            sys.stderr.write(p.stderr.decode(errors="replace"))
            done["exitCode"] = p.returncode
    except BaseException as e:
        done["status"] = "error"
        done["error"] = {"name": type(e).__name__, "value": str(e),
                         "traceback": traceback.format_exception_only(type(e), e)}
    busy[0] = False
    done["executionCount"] = count
    send(done)
