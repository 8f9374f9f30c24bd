#!/usr/bin/env bash
# Builds the fuzz harnesses (tests/fuzz/*_fuzz.cpp) with clang, libFuzzer, AddressSanitizer
# and UndefinedBehaviorSanitizer into build-fuzz/, then runs each for a bounded time on its
# committed corpus (tests/fuzz/corpus/NAME). New inputs go to build-fuzz/corpus/NAME, never
# into the repo; a finding (crash, sanitizer report, broken property, timeout) is written to
# build-fuzz/findings/ and fails the script. docs/fuzzing.md says how to reproduce and fix one.
#
#   scripts/fuzz.sh                   every harness, FUZZ_BUDGET seconds in all (default 120)
#   scripts/fuzz.sh job_spec 300      one harness for 300 s
#   FUZZ_SECONDS=30 scripts/fuzz.sh   every harness for 30 s each
#   FUZZ_ONLY="job_spec queue_file" FUZZ_BUDGET=60 scripts/fuzz.sh
#                                     only these harnesses (built alone), 60 s in all; CI runs
#                                     the ones that link only the spec part this way
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
CC_BIN=${FUZZ_CC:-clang-14}
CXX_BIN=${FUZZ_CXX:-clang++-14}

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_C_COMPILER="$CC_BIN" -DCMAKE_CXX_COMPILER="$CXX_BIN" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DTESSERA_FUZZ=ON -DTESSERA_WERROR=OFF >/dev/null  # line tables are enough for its reports
if (($# > 0)); then
  harnesses=("$1")
  seconds=${2:-60}
else
  if [ -n "${FUZZ_ONLY:-}" ]; then
    read -r -a harnesses <<<"$FUZZ_ONLY"
  else
    mapfile -t harnesses < <(ls tests/fuzz/*_fuzz.cpp | sed 's|.*/||; s|_fuzz\.cpp$||')
  fi
  seconds=${FUZZ_SECONDS:-$(((${FUZZ_BUDGET:-120} + ${#harnesses[@]} - 1) / ${#harnesses[@]}))}
fi
targets=()
for name in "${harnesses[@]}"; do targets+=("fuzz_$name"); done
ninja -C "$BUILD_DIR" -j"${JOBS:-$(nproc)}" "${targets[@]}"

mkdir -p "$BUILD_DIR/findings"
failed=()
for name in "${harnesses[@]}"; do
  bin="$BUILD_DIR/fuzz_$name"
  [ -x "$bin" ] || { echo "fuzz: no harness $name (tests/fuzz/${name}_fuzz.cpp)" >&2; exit 2; }
  mkdir -p "$BUILD_DIR/corpus/$name"
  echo "fuzz: $name for ${seconds}s"
  # -timeout: an input that takes 10 s is a finding (a hang); -rss_limit_mb: so is 2 GiB.
  if ! ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$BUILD_DIR/findings/$name-" \
    "$BUILD_DIR/corpus/$name" "tests/fuzz/corpus/$name" >"$BUILD_DIR/fuzz_$name.log" 2>&1; then
    failed+=("$name")
    echo "fuzz: $name FOUND something; the log: $BUILD_DIR/fuzz_$name.log" >&2
    grep -E 'ERROR|fuzz finding|runtime error|Test unit written' "$BUILD_DIR/fuzz_$name.log" |
      head -5 >&2 || true
  fi
  grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$BUILD_DIR/fuzz_$name.log" |
    tr '\n' ' ' || true
  echo
done
if ((${#failed[@]})); then
  echo "fuzz: findings in: ${failed[*]} (inputs in $BUILD_DIR/findings/)" >&2
  exit 1
fi
echo "fuzz: ${#harnesses[@]} harness(es), ${seconds}s each, no finding"
