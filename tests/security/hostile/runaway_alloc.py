# expect: limit memory
# Asks for ever more memory and touches it.
blocks = []
size = 1 << 24
while True:
    blocks.append(bytearray(size))
    size *= 2
