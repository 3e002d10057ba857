# expect: contained
# Unbounded recursion with the interpreter's guard lifted.
import sys
import threading

sys.setrecursionlimit(10**8)
threading.stack_size(512 * 1024 * 1024)


def f(n):
    return f(n + 1) + 1


def run():
    try:
        f(0)
    except RecursionError as e:
        print("RecursionError", e)
    except MemoryError:
        print("MemoryError")


t = threading.Thread(target=run)
t.start()
t.join()
