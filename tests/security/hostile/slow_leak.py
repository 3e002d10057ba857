# expect: limit memory
# Leaks 1 MiB at a time, each page touched.
leak = []
while True:
    leak.append(b"x" * (1 << 20))
