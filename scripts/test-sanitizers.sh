#!/usr/bin/env bash
# Builds the test suite with AddressSanitizer + UndefinedBehaviorSanitizer
# (gcc, ./build-asan) and runs it through CTest; every program the tests
# start (tune, synthetic_trial, bpe_train) is instrumented too, and any
# report fails the test that caused it. With --tsan, also builds the local
# backend, the tuner, storage, the MLflow sink, the dashboard server and the
# Kubernetes backend with ThreadSanitizer (./build-tsan) and runs their tests.
# Usage: scripts/test-sanitizers.sh [--with-torch] [--tsan] [--core]
#   --with-torch  also the libtorch trainer and its tests (slow); by default
#                 the build is -DTUNE_WITH_TORCH=OFF
#   --core        only the unit tests of the core modules (what CI runs,
#                 scripts/test.sh): builds just those test programs and runs
#                 each once, not the end-to-end, Kubernetes or browser tests
set -euo pipefail
cd "$(dirname "$0")/.."

torch=OFF
tsan=0
core=0
for a in "$@"; do
  case "$a" in
    --with-torch) torch=ON ;;
    --tsan) tsan=1 ;;
    --core) core=1 ;;
    *) echo "test-sanitizers.sh: unknown option '$a' (expected --with-torch, --tsan or --core)" >&2; exit 2 ;;
  esac
done
if [ "$core" = 1 ] && { [ "$torch" = ON ] || [ "$tsan" = 1 ]; }; then
  echo "test-sanitizers.sh: --core runs alone (without --with-torch and --tsan)" >&2
  exit 2
fi

jobs=${TUNE_BUILD_JOBS:-2}
test_jobs=${TUNE_TEST_JOBS:-2}
# -O1 with line tables: the sanitizers' usual setting, and much quicker to
# build than -O2 -g.
common=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
        -DTUNE_BUILD_BENCH=OFF)

# halt_on_error: the first report ends the program with a non-zero exit;
# detect_leaks: leaks are errors too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -S . -B build-asan "${common[@]}" -DTUNE_WITH_TORCH=$torch \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
if [ "$core" = 1 ]; then
  # The core modules' unit tests: the results database, search, schedulers,
  # the metric-line parser and local backend, experiment.json, the tuner's
  # loop, tracking, the importer, and the trainer's torch-free parsers
  # (safetensors header; tokenizer and data where lora_text is built).
  core_tests=(metric_parser_test resource_pool_test port_allocator_test local_backend_test last_line_test
              search_test schedulers_test storage_test report_test spec_test tuner_test progress_test
              utf8_test read_file_test one_line_test atomic_write_test database_docs_test
              module_options_test results_query_test
              tracking_test import_test safetensors_header_test
              pareto_test pareto_golden_test nsga2_sampler_test tpe_multi_objective_test storage_contract_test
              trial_values_test pareto_view_test)
  if grep -qw trainer_text_test <(cmake --build build-asan --target help 2>/dev/null); then core_tests+=(trainer_text_test); fi
  build_targets=()
  for t in "${core_tests[@]}"; do build_targets+=(--target "$t"); done
  cmake --build build-asan -j "$jobs" "${build_targets[@]}"
  # Each program runs all its test cases once (as CTest would from the
  # build dir), in a scratch TMPDIR that must be empty afterwards.
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/tune_sanitizers.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  for t in "${core_tests[@]}"; do
    echo "test-sanitizers.sh: $t under ASan+UBSan"
    (cd build-asan && TMPDIR=$scratch "bin/$t")
  done
  if [ -n "$(ls -A "$scratch")" ]; then
    echo "test-sanitizers.sh: the tests left files in their TMPDIR: $(ls -A "$scratch" | head -5 | tr '\n' ' ')" >&2
    exit 1
  fi
  echo "test-sanitizers.sh: clean"
  exit 0
fi
cmake --build build-asan -j "$jobs"
(cd build-asan && ctest --output-on-failure -j "$test_jobs" --timeout 1800)

if [ "$tsan" = 1 ]; then
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
  cmake -S . -B build-tsan "${common[@]}" -DTUNE_WITH_TORCH=OFF -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >/dev/null
  # Every module with threads of its own: the local backend's monitor, the
  # tuner's loop, SQLite storage shared by threads, the MLflow sink's
  # delivery thread, the dashboard's HTTP server, the Kubernetes backend's
  # log followers and poller.
  tsan_tests=(local_backend_test last_line_test tuner_test progress_test e2e_test storage_test
              mlflow_client_test dashboard_api_test)
  # The Kubernetes tests exist where kubectl does (tests/k8s/CMakeLists.txt).
  if command -v kubectl >/dev/null; then tsan_tests+=(k8s_cluster_test k8s_faults_test); fi
  cmake --build build-tsan -j "$jobs" --target "${tsan_tests[@]}" tune synthetic_trial
  # Catch2 binaries run every test case of their module (from the build
  # dir, as CTest runs them).
  for t in "${tsan_tests[@]}"; do
    echo "test-sanitizers.sh: $t under ThreadSanitizer"
    (cd build-tsan && "bin/$t")
  done
fi
echo "test-sanitizers.sh: clean"
