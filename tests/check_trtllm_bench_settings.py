#!/usr/bin/env python3
"""The token budget and sequence limit of every TensorRT-LLM case of the serving validation set
(data/validation/serving.json) are the ones trtllm-bench sets itself, recomputed here.

`trtllm-bench throughput` without --max_batch_size and --max_num_tokens (the perf-overview
pages' command) takes them from its heuristic: get_settings() in
tensorrt_llm/bench/benchmark/utils/general.py calls calc_engine_setting() and finetune_setting()
in tensorrt_llm/bench/build/tuning.py with the dataset's mean ISL and OSL, the checkpoint's
weight and KV-cache bytes per element, TP and PP, and --kv_cache_free_gpu_mem_fraction (default
0.90, throughput.py); with chunked prefill off it raises max_num_tokens to at least the longest
prompt plus max_batch_size. The device memory is this table's (trtllm-bench reads NVML's total,
a little more on these parts: the case notes say what that changes). Weights and KV cache are
FP8 (1 byte) in every case (ModelOpt FP8 checkpoints). Usage: check_trtllm_bench_settings.py
CAPCALC PROJECT_DIR
"""
import json
import math
import subprocess
import sys

GIB = 1024**3
KV_FRACTION = 0.90


def finetune(kv_cache_max_requests, isl, osl, pp=1):
    raw_bs = min(kv_cache_max_requests, 4096) / pp
    raw_token = min(raw_bs * (1 + isl / osl), 32768)
    if raw_bs < 256:
        max_bs = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        max_bs = 128 * math.ceil(raw_bs / 128)
    else:
        max_bs = 256 * math.ceil(raw_bs / 256)
    if raw_token < 4096:
        max_token = max(2048, 256 * math.ceil(raw_token / 256))
    elif raw_token < 8192:
        max_token = 512 * math.ceil(raw_token / 512)
    else:
        max_token = 1024 * math.ceil(raw_token / 1024)
    return max_bs, max_token


def settings(params, kv_bytes_per_token, memory_bytes, tp, isl, osl):
    # calc_engine_setting: the KV bytes of a token over the TP group (each GPU holds at least
    # one KV head: true of every case here), the engine at 1 byte a weight.
    byte_per_token = kv_bytes_per_token / GIB
    engine = params * 1.0 / GIB
    available = memory_bytes / GIB * tp - engine
    requests = available * KV_FRACTION / (byte_per_token * (isl + osl))
    max_bs, max_token = finetune(requests, isl, osl)
    return max_bs, max(max_token, isl + max_bs)


def cli_json(cli, project, *args):
    out = subprocess.run([cli, *args, "--format", "json"], cwd=project, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    cli, project = sys.argv[1], sys.argv[2]
    with open(f"{project}/data/validation/serving.json") as f:
        cases = json.load(f)["cases"]
    failures = 0
    checked = 0
    for case in cases:
        if case["runtime"] != "tensorrt-llm":
            continue
        model = f"data/models/{case['model']}"
        est = cli_json(cli, project, "estimate", model, "--gpu", case["device"], "--precision",
                       "fp8", "--kv-precision", "fp8", "--prompt-tokens", "1")
        params = est["model"]["params"]
        kv = est["estimate"]["llm"]["kv_cache_bytes_per_token"]
        memory = cli_json(cli, project, "hw", "show", case["device"])["device"]["memory_bytes"]
        want = settings(params, kv, memory, case["tensor_parallel"], case["prompt_tokens"],
                        case["output_tokens"])
        got = (case.get("max_num_seqs"), case.get("max_num_batched_tokens"))
        checked += 1
        if got != want:
            failures += 1
            print(f"{case['id']}: max_num_seqs, max_num_batched_tokens {got}; trtllm-bench's "
                  f"heuristic gives {want}")
    print(f"{checked} TensorRT-LLM cases checked, {failures} differ")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
