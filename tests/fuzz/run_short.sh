#!/usr/bin/env bash
# A short fuzz run of every target (issue 21 §4): builds the libFuzzer binaries with clang
# (ASan + UBSan) in BUILD_DIR and runs each for SECONDS on a copy of its seeds, so that the
# repository is never written. A crash, a sanitizer report, a broken contract (fuzz_target.hpp:
# an unlocated or multi-line error, JSON nested past the limit accepted, a model past the
# documented limits) or a run over 10 s or 4 GiB on one input fails the step; libFuzzer keeps
# the input as BUILD_DIR/fuzz-artifacts/<target>/crash-*, to be added to tests/fuzz/corpus/.
#   tests/fuzz/run_short.sh [BUILD_DIR] [SECONDS]     (defaults: build-fuzz, 50)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build-fuzz}"
seconds="${2:-50}"

if ! command -v clang++ > /dev/null; then
  echo "fuzz: skipped: clang++ is not installed (apt-get install clang libclang-rt-14-dev)"
  exit 0
fi
# libFuzzer's runtime comes with clang's compiler-rt (Debian: libclang-rt-NN-dev).
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer -o /dev/null - 2> /dev/null; then
  echo "fuzz: skipped: clang++ cannot link libFuzzer (apt-get install libclang-rt-14-dev)"
  exit 0
fi

# -O1 -g1 as in .ci/run's sanitizer build: line tables for the stack traces, half the build time.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_C_COMPILER=clang -DCAPCALC_FUZZ=ON -DCAPCALC_BUILD_BENCHMARKS=OFF > /dev/null
targets=(model hardware budget measurements runtimes ranges serving onnx onnx_text)
cmake --build "$build" --target "${targets[@]/#/capcalc_fuzz_}"

seeds() {  # The seed folders and files of tests/fuzz/CMakeLists.txt, by target.
  case "$1" in
    model) echo data/models tests/cli tests/hostile/corpus/model tests/hostile/corpus/hf ;;
    hardware) echo data/hardware.json tests/cli/my_hardware.json tests/cli/bad_hardware.json tests/hostile/corpus/hardware ;;
    budget) echo tests/cli/budget_pass.json tests/cli/budget_fail.json tests/hostile/corpus/budget ;;
    measurements) echo data/validation tests/cli/records.json tests/hostile/corpus/measurements ;;
    runtimes) echo data/runtimes.json tests/hostile/corpus/runtime ;;
    ranges) echo data/ranges.json ;;
    serving) echo data/validation/serving.json tests/cli/serve_validation_small.json tests/cli/serve_mix.json tests/cli/serve_trace.jsonl tests/hostile/corpus/serving tests/hostile/corpus/mix tests/hostile/corpus/trace ;;
    onnx) echo tests/exports tests/hostile/corpus/onnx ;;
    onnx_text) ;;  # Prefixed copies below: the first byte picks the syntax.
  esac
}

# fuzz_onnx_text reads ONNX's syntax after an even first byte, protobuf text after an odd one.
onnx_text_seeds() {
  local n=0 file
  for file in tests/cli/*.onnxtxt tests/cli/*.onnxtext tests/hostile/corpus/onnxtxt/*; do
    { printf '\0'; cat "$file"; } > "$1/seed_onnx_$((n++))"
  done
  for file in tests/hostile/corpus/textproto/* tests/hostile/onnx/*.textproto; do
    { printf '\1'; cat "$file"; } > "$1/seed_proto_$((n++))"
  done
}

failed=()
for target in "${targets[@]}"; do
  work="$build/fuzz-work/$target"
  artifacts="$build/fuzz-artifacts/$target"
  rm -rf "$work" && mkdir -p "$work" "$artifacts"
  if [ -d "tests/fuzz/corpus/$target" ]; then cp -r "tests/fuzz/corpus/$target/." "$work/"; fi
  for seed in $(seeds "$target"); do
    if [ -d "$seed" ]; then find "$seed" -maxdepth 1 -type f -size -1M -exec cp {} "$work/" \;
    elif [ -f "$seed" ]; then cp "$seed" "$work/"; fi
  done
  if [ "$target" = onnx_text ]; then onnx_text_seeds "$work"; fi
  start=$(date +%s)
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
      "$build/tests/fuzz/capcalc_fuzz_$target" "$work" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" \
      > "$build/fuzz-$target.log" 2>&1; then
    echo "fuzz: $target: ok, $(($(date +%s) - start)) s, $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz-$target.log" | grep -o '[0-9]*$') runs"
  else
    echo "fuzz: $target: FAILED after $(($(date +%s) - start)) s; the end of its log:"
    tail -40 "$build/fuzz-$target.log"
    failed+=("$target")
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]} (inputs in $build/fuzz-artifacts/)"
  exit 1
fi
