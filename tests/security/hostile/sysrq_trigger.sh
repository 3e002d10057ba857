# expect: contained
# The magic SysRq trigger and kernel tunables ('h' only prints help: harmless
# even if it got through). The runner checks the host's core_pattern.
echo h > /proc/sysrq-trigger; echo "sysrq-trigger: $?"
echo 1 > /proc/sys/kernel/sysrq; echo "sysrq: $?"
echo '|/tmp/evil %p' > /proc/sys/kernel/core_pattern; echo "core_pattern: $?"
echo 0 > /proc/sys/kernel/randomize_va_space; echo "aslr: $?"
cat /proc/sys/kernel/core_pattern 2>&1
