#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan+UBSan) in ./build-fuzz and
# runs each for SECONDS (default 60), one after the other, starting from the
# committed seeds (fuzz/corpus/<target>/) plus what earlier runs found
# (build-fuzz/corpus/<target>/, kept between runs). Prints executions and new
# corpus entries per target; a crash leaves its input in
# build-fuzz/crashes/<target>/ and makes the script exit 1.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "fuzz.sh: expected SECONDS as a whole number of at least 1, got '$seconds'" >&2
  exit 2
fi
all=(metric_line_fuzz experiment_validate_fuzz safetensors_header_fuzz tokenizer_json_fuzz bpe_encode_fuzz
     katib_import_fuzz trainer_config_fuzz dashboard_request_fuzz)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
for t in "${targets[@]}"; do
  if [[ ! " ${all[*]} " =~ " $t " ]]; then
    echo "fuzz.sh: unknown target '$t' (targets: ${all[*]})" >&2
    exit 2
  fi
done

for c in clang clang++; do
  if ! command -v "$c" >/dev/null 2>&1; then
    echo "fuzz.sh: $c not found; run scripts/install-deps.sh" >&2
    exit 2
  fi
done

# Only the parsers and what they need: no libtorch, no tests, no benches.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUNE_BUILD_FUZZ=ON \
  -DTUNE_WITH_TORCH=OFF -DTUNE_BUILD_TESTS=OFF -DTUNE_BUILD_BENCH=OFF >/dev/null
build_targets=()
for t in "${targets[@]}"; do build_targets+=(--target "$t"); done
cmake --build build-fuzz -j "${TUNE_BUILD_JOBS:-2}" "${build_targets[@]}"

name_of() { echo "${1%_fuzz}"; }
failed=0
summary=()
for t in "${targets[@]}"; do
  name=$(name_of "$t")
  work=build-fuzz/corpus/$name
  crashes=build-fuzz/crashes/$name
  log=build-fuzz/logs/$name.log
  mkdir -p "$work" "$crashes" build-fuzz/logs
  args=(-max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2048 -timeout=10
        -artifact_prefix="$crashes/")
  [ -f "fuzz/$name.dict" ] && args+=(-dict="fuzz/$name.dict")
  echo "fuzz.sh: $t for ${seconds}s"
  rc=0
  # Seeds: fuzz/corpus/<name>/, plus the test fixtures a target shares with
  # its Catch2 tests (Katib's own examples, kept once with their licence).
  seeds=("fuzz/corpus/$name")
  [ "$name" = katib_import ] && seeds+=(tests/import/katib)
  "build-fuzz/bin/$t" "${args[@]}" "$work" "${seeds[@]}" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  added=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
  found=$(find "$crashes" -type f | sort)
  if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
    failed=1
    echo "fuzz.sh: $t FAILED (exit $rc); log: $log" >&2
    grep -m1 -E "ERROR: |runtime error:|==ERROR|deadly signal" "$log" >&2 || tail -20 "$log" >&2
    for f in $found; do echo "fuzz.sh:   input: $f" >&2; done
  fi
  summary+=("$(printf '%-22s %10s execs in %ss, %s new corpus entries%s' "$t" "${execs:-?}" "$seconds" \
    "${added:-?}" "$([ "$rc" -ne 0 ] || [ -n "$found" ] && echo ', CRASH' || true)")")
done
printf 'fuzz.sh: %s\n' "${summary[@]}"
exit $failed
