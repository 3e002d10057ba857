# expect: timeout
# Never returns.
while True:
    pass
