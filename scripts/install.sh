#!/usr/bin/env bash
# The first command: installs what sentry needs from Debian 12's packages,
# builds the `sentry` binary alone (build/sentry/sentry), installs it as
# /usr/local/bin/sentry (the name every example in README.md and docs/ uses),
# and runs examples/analysis.py under it. Building the tests is
# scripts/test.sh's job. Run as root on a fresh machine; safe to run again.
#
# Environment: SENTRY_SKIP_APT=1 skips apt-get; SENTRY_PREFIX (default
# /usr/local) is where bin/sentry goes; SENTRY_NO_EXAMPLE=1 skips the example;
# BUILD_TYPE (default RelWithDebInfo) and SENTRY_DEBUG_INFO (default OFF: a
# quarter less compile time) shape the build.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
if [ "${SENTRY_SKIP_APT:-0}" != 1 ]; then
  apt-get update -qq
  # libgtest-dev and libgmock-dev: the configure step finds GTest for the
  # test directories (configured, not built, here).
  apt-get install -y -qq --no-install-recommends \
    build-essential cmake ninja-build pkg-config clang-format \
    libseccomp-dev libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev \
    libssl-dev openssl ca-certificates python3 util-linux procps \
    libcli11-dev libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev libboost-context-dev >/dev/null
fi
# Configuring every directory is cheap (seconds); only the sentry target is built.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DSENTRY_DEBUG_INFO="${SENTRY_DEBUG_INFO:-OFF}" >/dev/null
ninja -C build sentry
prefix=${SENTRY_PREFIX:-/usr/local}
if install -D -m 0755 build/sentry/sentry "$prefix/bin/sentry" 2>/dev/null; then
  sentry="$prefix/bin/sentry"
  echo "installed: $sentry (built: $(pwd)/build/sentry/sentry)"
else
  sentry="$(pwd)/build/sentry/sentry"
  echo "built: $sentry (not installed: $prefix/bin is not writable; run as root, or set SENTRY_PREFIX)"
fi
if [ "${SENTRY_NO_EXAMPLE:-0}" != 1 ]; then
  echo "running: sentry run -- python3 examples/analysis.py"
  "$sentry" run -- python3 examples/analysis.py
fi
