#!/usr/bin/env bash
# Configures and builds Tessera into build/ (Release with debug info). Extra arguments go to
# cmake, e.g. -DTESSERA_SANITIZE=ON with BUILD_DIR=build-asan.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja "$@" >/dev/null
ninja -C "$BUILD_DIR" -j"${JOBS:-$(nproc)}"
