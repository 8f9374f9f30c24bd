#!/usr/bin/env bash
# The whole test suite: builds, then runs every CTest test (unit, integration, e2e).
# Extra arguments go to ctest, e.g. `scripts/test.sh -L unit`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j"${JOBS:-$(nproc)}" --timeout 600 "$@"
