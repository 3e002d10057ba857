#!/usr/bin/env bash
# The second command: installs (scripts/install.sh: the packages and the
# sentry binary), builds every test and benchmark target, and runs every test
# (unit, conformance natively and under sentry, security, e2e, limits, hostile
# corpus, the docs' commands and links) through ctest.
#
# With SENTRY_SANITIZERS=1 it then builds again with ASan + UBSan (build-asan/)
# and runs the suites that do not measure time (limits and the hostile corpus
# check wall-clock bounds, which a sanitized sentry is too slow for), each in
# its main mode: the `_seccomp_only` and `_rootless` repeats run the same
# sentry code without namespaces or as a user, and ran unsanitized above
# (sanitized, they added minutes to CI).
#
# SENTRY_DEBUG_INFO=OFF (what CI sets, and install.sh's default for build/)
# builds both without -g.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's start, in seconds since this script began (CI's log).
phase() { echo "test.sh: $1 at ${SECONDS} s"; }
SENTRY_NO_EXAMPLE=1 scripts/install.sh
# What the tests drive for real: the engines (podman, containerd and the
# runtimes sentry is compared with), strace for the trace, Debian's
# data-science stack, and for the CRI test gRPC (kubelet's calls), the CNI
# loopback plugin and ip (its pod network), and newuidmap (uidmap: the
# rootless tests' user with a subordinate range).
if [ "${SENTRY_SKIP_APT:-0}" != 1 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    podman containerd runc crun strace python3-numpy python3-pandas python3-scipy \
    python3-sklearn python3-matplotlib python3-psutil python3-grpcio python3-grpc-tools libpython3.11-testsuite \
    containernetworking-plugins iproute2 uidmap >/dev/null
  # Installed, so the engine tests must run: a missing engine fails them
  # rather than skipping (ctest counts a skip as a pass).
  export SENTRY_REQUIRE_ENGINES=1
fi
phase "build"
ninja -C build
# The sanitized tree builds while the plain suite runs, at the idle scheduling
# class: about half of that suite runs one RUN_SERIAL test at a time, leaving
# a core free, and its other tests often wait. SCHED_IDLE takes only CPU no
# test wants, so the timing-sensitive suites see the machine as before; its
# temporaries go under build-asan/ (security_test compares the host's /tmp).
asan_build=
if [ "${SENTRY_SANITIZERS:-0}" = 1 ]; then
  cmake -S . -B build-asan -G Ninja -DSENTRY_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
    -DSENTRY_DEBUG_INFO="${SENTRY_DEBUG_INFO:-ON}" \
    -DSENTRY_SKIP_DIRS="bench;tests/limits;tests/cpython" >/dev/null
  mkdir -p build-asan/tmp
  # Its own process group (setsid), so that a failing suite ends it whole.
  TMPDIR="$PWD/build-asan/tmp" setsid chrt --idle 0 ninja -C build-asan -j 2 \
    >build-asan/build.log 2>&1 &
  asan_build=$!
  trap 'kill -- -"$asan_build" 2>/dev/null || true' EXIT
fi
# Two tests at a time (one per core of the CI machine): the suites that
# measure time or count the host's resources are RUN_SERIAL in their
# CMakeLists, and those that share a made user take turns (RESOURCE_LOCK).
jobs=${SENTRY_TEST_JOBS:-2}
# An entry that fails runs once more (a suite that loses a race to the load
# of the test beside it on two cores); its first output stays in the log, and
# one that fails twice fails the run. SENTRY_TEST_TRIES=1 runs each once.
tries=(--repeat "until-pass:${SENTRY_TEST_TRIES:-2}")
phase "tests"
ctest --test-dir build --output-on-failure --timeout 600 -j "$jobs" "${tries[@]}" "$@"
phase "tests done"
if [ -n "$asan_build" ]; then
  if ! wait "$asan_build"; then
    tail -n 60 build-asan/build.log
    echo "test.sh: the sanitized build failed (whole log: build-asan/build.log)" >&2
    exit 1
  fi
  tail -n 1 build-asan/build.log
  # Left out here as well: what runs no sentry code of its own (the docs
  # checks, the session kernel natively), the Inspector's npx start-ups, and
  # the as-a-user repeats of suites (rootless_test runs sanitized).
  phase "sanitized tests"
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure --timeout 900 -j "$jobs" \
    "${tries[@]}" -E '_seccomp_only$|_rootless$|_mcp_inspector$|^docs_check|^session_kernel(_source)?$|_doc$'
fi
phase "done"
