# expect: timeout
# The classic bash fork bomb; the shell then waits forever, so the run ends
# at its timeout with the process count capped by --pids-limit all along.
/bin/bash -c ':(){ :|:& };:; sleep 600'
