# expect: contained
# kill -9 -1 from a shell (and pkill of the usual host daemons).
kill -9 1 2>&1
pkill -9 sshd 2>&1; pkill -9 dockerd 2>&1; pkill -9 -u root 2>&1
kill -9 -1
echo "still here"
