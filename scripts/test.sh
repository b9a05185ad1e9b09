#!/usr/bin/env bash
# Sets up ls2c, builds it, and runs every test:
#   1. lit + FileCheck tests (dialect, passes, frontend, tools)
#   2. GoogleTest unit tests
#   3. an AddressSanitizer + UndefinedBehaviorSanitizer build of the MLIR-free
#      parts (model descriptions, support, runtime) and their unit tests.
# Prints each stage's wall time and, last, one "tests: N passed, N failed" line.
set -uo pipefail
cd "$(dirname "$0")/.."
JOBS=${LS2C_JOBS:-$(nproc)}
LIT=/usr/lib/llvm-19/build/utils/lit/lit.py
LOG_DIR=$(mktemp -d)
trap 'rm -rf "$LOG_DIR"' EXIT

declare -a STAGES TIMES
passed=0
failed=0
skipped=0
status=0

stage() { # stage NAME COMMAND...: runs COMMAND, records its time, stops on failure
  local name=$1 start end
  shift
  echo "=== $name"
  start=$(date +%s)
  "$@"
  local rc=$?
  end=$(date +%s)
  STAGES+=("$name")
  TIMES+=("$((end - start))")
  if [ $rc -ne 0 ]; then
    echo "=== $name FAILED (exit $rc)"
    status=1
  fi
  return $rc
}

summary() {
  echo
  echo "stage times:"
  for i in "${!STAGES[@]}"; do
    printf '  %-28s %5ss\n' "${STAGES[$i]}" "${TIMES[$i]}"
  done
  echo "tests: $passed passed, $failed failed, $skipped skipped (they need a GPU, NCCL or the shared data: README)"
  exit $status
}

# lit prints "  Passed: N" and "  Failed: N" lines.
count_lit() {
  local p f
  p=$(sed -nE 's/^\s+Passed\s*:\s*([0-9]+).*/\1/p' "$1" | tail -1)
  f=$(sed -nE 's/^\s+Failed\s*:\s*([0-9]+).*/\1/p' "$1" | tail -1)
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-0}))
}

# ctest prints "N% tests passed, F tests failed out of T" and counts a
# skipped test (GTEST_SKIP: no GPU) as passed; its progress line says
# "***Skipped".
count_ctest() {
  local line t f k
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of' "$1" | tail -1)
  t=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
  f=$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<<"$line")
  k=$(grep -c '\*\*\*Skipped' "$1" || true)
  passed=$((passed + ${t:-0} - ${f:-0} - ${k:-0}))
  failed=$((failed + ${f:-0}))
  skipped=$((skipped + ${k:-0}))
}

run_lit() {
  python3 "$LIT" -v --time-tests build/test 2>&1 | tee "$LOG_DIR/lit.log"
  local rc=${PIPESTATUS[0]}
  count_lit "$LOG_DIR/lit.log"
  return "$rc"
}

run_ctest() { # run_ctest BUILD_DIR LOG [ctest args]
  local dir=$1 log=$2
  shift 2
  ctest --test-dir "$dir" --output-on-failure -j "$JOBS" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  count_ctest "$log"
  return "$rc"
}

build_sanitized() {
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DLS2C_ENABLE_MLIR=OFF -DLS2C_SANITIZE=ON &&
    cmake --build build-asan -j "$JOBS"
}

stage "setup (Debian packages)" scripts/setup.sh --no-build || summary
stage "build" scripts/build.sh || summary
stage "lit tests" run_lit
stage "unit tests" run_ctest build "$LOG_DIR/unit.log" -E '^lit$'
stage "sanitizer build" build_sanitized || summary
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  stage "sanitizer unit tests" run_ctest build-asan "$LOG_DIR/asan.log"
summary
