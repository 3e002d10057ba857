# expect: errno E2BIG
# execve with a huge argv and a huge environment.
import errno
import os

for what, argv, env in [("argv", ["/bin/true"] + ["A" * 131072] * 400, {}),
                        ("env", ["/bin/true"], {f"K{i}": "B" * 100000 for i in range(400)}),
                        ("one arg", ["/bin/true", "C" * (1 << 20)], {})]:
    pid = os.fork()
    if pid == 0:
        try:
            os.execve("/bin/true", argv, env)
        except OSError as e:
            print(what, errno.errorcode.get(e.errno, e), flush=True)
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    print(what, "status", status, flush=True)
