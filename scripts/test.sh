#!/usr/bin/env bash
# Installs, builds and runs every test (unit, conformance natively and under
# sentry, security, e2e) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
ctest --test-dir build --output-on-failure --timeout 600 "$@"
