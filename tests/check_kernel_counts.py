#!/usr/bin/env python3
"""Predicted kernels per step against the counts torch.profiler measured.

Every workload of data/validation/device/*-kernels.jsonl (bench/device/profile_kernels.py) is
estimated with the capcalc CLI as it ran (model, dims, precision, mode, runtime, optimizer), and
the predicted "kernels" is compared with the measured kernels_per_iter. The test fails when a
workload has no entry here, or when one is off by more than its gate: 20 % (issue 19), or the
figure reached where the model cannot honestly get there yet (the reason is beside it).

Usage: check_kernel_counts.py CAPCALC REPO_ROOT
"""

import glob
import json
import os
import subprocess
import sys

# Workload (as profile_kernels.py names it) -> the capcalc arguments that describe its run,
# and the gate on |predicted / measured - 1|.
TRAIN = ["--mode", "training", "--precision", "bf16", "--runtime", "pytorch-eager"]
WORKLOADS = {
    "resnet50_infer_fp16_bs1": (["resnet50", "-b", "1", "-p", "fp16", "--runtime", "eager"], 0.20),
    "resnet50_infer_fp32_bs1": (["resnet50", "-b", "1", "-p", "fp32", "--runtime", "eager"], 0.20),
    "mobilenet_v2_infer_fp16_bs1": (
        ["mobilenet_v2", "-b", "1", "-p", "fp16", "--runtime", "eager"], 0.20),
    "resnet50_infer_fp16_bs256": (
        ["resnet50", "-b", "256", "-p", "fp16", "--runtime", "eager"], 0.20),
    "bert_infer_fp16_bs1": (
        ["bert_base_hf", "-b", "1", "--set", "seq=128", "-p", "fp16", "--runtime", "eager"], 0.20),
    # AdamW (capcalc's adam) for the transformers, SGD with momentum for the vision models, as
    # profile_kernels.py steps them.
    # GPT-2 (-10 % since gelu_new's eight kernels are counted): dropout (active in this run's
    # train mode) is not emitted by the Hugging Face importer, its fused c_attn makes capcalc's
    # attention count high, and the embedding's backward (a cub radix sort and segment kernels)
    # is not counted yet.
    "gpt2_train_bf16_bs16_seq1024": (["gpt2_hf", "-b", "16", "--set", "seq=1024"] + TRAIN, 0.20),
    "bert_train_bf16_bs64_seq128": (["bert_base_hf", "-b", "64", "--set", "seq=128"] + TRAIN, 0.20),
    "vit_b_16_train_bf16_bs128": (
        ["vit_b_16", "-b", "128", "--optimizer", "momentum"] + TRAIN, 0.20),
    "resnet50_train_bf16_bs64": (["resnet50", "-b", "64", "--optimizer", "momentum"] + TRAIN, 0.20),
    "llama2_7b_prefill_bf16_bs1_p512": (
        ["llama2_7b_hf", "-b", "1", "--set", "seq=512", "-p", "bf16", "--runtime", "eager"], 0.20),
    "resnet50_compiled_fp16_bs1": (
        ["resnet50", "-b", "1", "-p", "fp16", "--runtime", "torch-compile"], 0.20),
}
# Not compared here, with the reason: the CLI's JSON gives the kernels of a forward pass or a
# training step, not of the serving estimate's decode step; tests/kernel_rules_test.cpp
# compares it through the library (within 20 %).
UNCHECKED = {
    "llama2_7b_decode_bf16_bs1_ctx512":
        "estimate's JSON has no kernel count for a decode step (kernel_rules_test.cpp checks it)",
}


def predicted(capcalc, args):
    out = subprocess.run([capcalc, "estimate"] + args + ["--gpu", "h200", "-f", "json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["estimate"]["kernels"]


def main():
    capcalc, root = sys.argv[1], sys.argv[2]
    failures = []
    for path in sorted(glob.glob(os.path.join(root, "data/validation/device/*-kernels.jsonl"))):
        for line in open(path):
            record = json.loads(line)
            name, measured = record["workload"], record["kernels_per_iter"]
            if name in UNCHECKED:
                print(f"{name}: measured {measured:.0f}, not compared: {UNCHECKED[name]}")
                continue
            if name not in WORKLOADS:
                failures.append(f"{name}: no capcalc arguments for this workload in {__file__}")
                continue
            args, gate = WORKLOADS[name]
            count = predicted(capcalc, args)
            error = count / measured - 1
            verdict = "ok" if abs(error) <= gate else f"FAIL (gate {gate:.0%})"
            print(f"{name}: predicted {count:.0f}, measured {measured:.0f}, {error:+.1%} {verdict}")
            if abs(error) > gate:
                failures.append(name)
    if failures:
        print("failed: " + ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
