# expect: contained
# Fills the disk from a shell with many files and dd, then keeps writing.
mkdir -p /tmp/fill
i=0
while [ $i -lt 100 ]; do
  dd if=/dev/zero of=/tmp/fill/f$i bs=1M count=4 2>/dev/null || { echo "dd failed at $i"; break; }
  i=$((i+1))
done
df -h /tmp 2>&1 | tail -1
