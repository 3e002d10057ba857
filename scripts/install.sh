#!/usr/bin/env bash
# Installs what sentry needs from Debian 12's packages and builds it into build/.
# Run as root (or with sudo) on a fresh machine; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
if [ "${SENTRY_SKIP_APT:-0}" != 1 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends \
    build-essential cmake ninja-build pkg-config clang-format \
    libseccomp-dev libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev \
    libssl-dev openssl ca-certificates python3 util-linux procps \
    libcli11-dev libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev libboost-context-dev >/dev/null
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DSENTRY_DEBUG_INFO="${SENTRY_DEBUG_INFO:-ON}" >/dev/null
ninja -C build
echo "built: $(pwd)/build/sentry/sentry"
