#!/usr/bin/env python3
"""Count the GPU kernels of the measured workloads and where their GPU time goes.

For each workload of measure.py that capcalc mispredicted most, one iteration (a forward, a
training step or a decode step) is profiled with torch.profiler, after warm-up. The chrome
trace is read back and summarised: kernels per iteration, the GPU's busy time (kernel time
summed) against the wall time, and the kernels that take the most GPU time. This is what
capcalc's per-layer model stands for: one roofline time per layer plus one overhead floor per
kernel launch.

Usage: python3 bench/device/profile_kernels.py OUT_DIR [--quick]
"""

import argparse
import collections
import json
import os
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402  (its model builders)

args = None
summary_file = None


def profile(name, fn, iters=3):
    for _ in range(3):
        fn()
    measure.sync()
    from torch.profiler import ProfilerActivity, profile as torch_profile
    activities = [ProfilerActivity.CPU]
    if measure.device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    t0 = time.perf_counter()
    with torch_profile(activities=activities) as prof:
        for _ in range(iters):
            fn()
        measure.sync()
    wall = (time.perf_counter() - t0) / iters
    path = os.path.join("/tmp", f"trace_{name}.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    by_name = collections.defaultdict(lambda: [0, 0.0])
    for e in kernels:
        entry = by_name[e["name"][:90]]
        entry[0] += 1
        entry[1] += e.get("dur", 0)
    busy_us = sum(e.get("dur", 0) for e in kernels) / iters
    top = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:25]
    result = {"workload": name, "iters": iters, "wall_s_per_iter": wall,
              "kernels_per_iter": len(kernels) / iters, "gpu_busy_s_per_iter": busy_us * 1e-6,
              "top_kernels": [{"name": k, "count_per_iter": v[0] / iters,
                               "gpu_s_per_iter": v[1] * 1e-6 / iters} for k, v in top]}
    summary_file.write(json.dumps(result) + "\n")
    summary_file.flush()
    measure.log(f"{name}: wall {wall * 1e3:.2f} ms, {len(kernels) / iters:.0f} kernels, "
                f"GPU busy {busy_us / 1e3:.2f} ms")
    for k, v in top[:12]:
        measure.log(f"    {v[1] / iters / 1e3:8.3f} ms  x{v[0] / iters:6.1f}  {k}")


def guarded(name, fn):
    measure.log(f"== {name} (at {measure.elapsed():.1f} s)")
    try:
        fn()
    except Exception:  # noqa: BLE001
        measure.log(f"FAILED {name}:\n{traceback.format_exc()}")
    finally:
        if measure.device == "cuda":
            torch.cuda.empty_cache()


def vision_forward(name, precision, batch):
    measure.set_tf32(False)
    torch.backends.cudnn.benchmark = True
    dtype = measure.DTYPES[precision]
    cl = precision in ("fp16", "bf16")  # As measure.py runs them.
    model = measure.vision_model(name).to(device=measure.device, dtype=dtype).eval()
    if cl:
        model = model.to(memory_format=torch.channels_last)
    x = measure.image_batch(batch, dtype, cl, measure.image_size(name))
    with torch.inference_mode():
        profile(f"{name}_infer_{precision}_bs{batch}", lambda: model(x))


def vision_compiled(name, batch):
    measure.set_tf32(False)
    model = measure.vision_model(name).to(device=measure.device, dtype=torch.float16).eval()
    model = model.to(memory_format=torch.channels_last)
    compiled = torch.compile(model)
    x = measure.image_batch(batch, torch.float16, True, measure.image_size(name))
    with torch.inference_mode():
        profile(f"{name}_compiled_fp16_bs{batch}", lambda: compiled(x))


def vision_step(name, batch):
    measure.set_tf32(False)
    torch.backends.cudnn.benchmark = True
    cl = name != "vit_b_16"
    model = measure.vision_model(name).to(device=measure.device).train()
    if cl:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = measure.image_batch(batch, torch.float32, cl, measure.image_size(name))
    y = torch.randint(0, 1000, (batch,), device=measure.device)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=measure.device, dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    profile(f"{name}_train_bf16_bs{batch}", step, iters=2)


def bert_forward(batch):
    model, config = measure.hf_model("bert_base_hf.json", "BertForMaskedLM", torch.float16)
    model.eval()
    ids = measure.tokens(batch, 128, config.vocab_size)
    with torch.inference_mode():
        profile(f"bert_infer_fp16_bs{batch}", lambda: model(input_ids=ids,
                                                            attention_mask=torch.ones_like(ids)))


def lm_step(file_name, cls_name, seq, batch, tag):
    model, config = measure.hf_model(file_name, cls_name, torch.float32)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = measure.tokens(batch, seq, config.vocab_size)
    mask = torch.ones_like(ids)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=measure.device, dtype=torch.bfloat16):
            loss = model(input_ids=ids, attention_mask=mask, labels=ids).loss
        loss.backward()
        opt.step()

    profile(f"{tag}_train_bf16_bs{batch}_seq{seq}", step, iters=2)


def llama_decode(batch, prompt):
    model, config = measure.hf_model("llama2_7b_hf.json", "LlamaForCausalLM", torch.bfloat16)
    model.eval()
    ids = measure.tokens(batch, prompt, config.vocab_size)
    with torch.inference_mode():
        out = model(input_ids=ids, use_cache=True)
        state = {"past": out.past_key_values,
                 "next": out.logits[:, -1:].argmax(-1)}

        def step():
            o = model(input_ids=state["next"], past_key_values=state["past"], use_cache=True)
            state["past"] = o.past_key_values
            state["next"] = o.logits[:, -1:].argmax(-1)

        profile(f"llama2_7b_decode_bf16_bs{batch}_ctx{prompt}", step, iters=5)
        prompt_ids = measure.tokens(batch, prompt, config.vocab_size)
        profile(f"llama2_7b_prefill_bf16_bs{batch}_p{prompt}",
                lambda: model(input_ids=prompt_ids, use_cache=True), iters=2)


def main():
    global args, summary_file
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    measure.args = argparse.Namespace(quick=args.quick, budget_s=1e9)
    os.makedirs(args.out, exist_ok=True)
    measure.out_file = open(os.path.join(args.out, "profile_records.jsonl"), "w")
    measure.log_file = open(os.path.join(args.out, "profile_log.txt"), "w")
    summary_file = open(os.path.join(args.out, "kernels.jsonl"), "w")
    if not torch.cuda.is_available():
        measure.device = "cpu"
    q = args.quick
    guarded("resnet50 fp16 bs1", lambda: vision_forward("resnet50", "fp16", 1))
    guarded("resnet50 fp32 bs1", lambda: vision_forward("resnet50", "fp32", 1))
    guarded("mobilenet_v2 fp16 bs1", lambda: vision_forward("mobilenet_v2", "fp16", 1))
    guarded("resnet50 fp16 bs256", lambda: vision_forward("resnet50", "fp16", 2 if q else 256))
    guarded("bert fp16 bs1", lambda: bert_forward(1))
    guarded("gpt2 train", lambda: lm_step("gpt2_hf.json", "GPT2LMHeadModel", 32 if q else 1024,
                                          2 if q else 16, "gpt2"))
    guarded("bert train", lambda: lm_step("bert_base_hf.json", "BertForMaskedLM", 128,
                                          2 if q else 64, "bert"))
    guarded("vit train", lambda: vision_step("vit_b_16", 2 if q else 128))
    guarded("resnet50 train", lambda: vision_step("resnet50", 2 if q else 64))
    guarded("llama decode", lambda: llama_decode(1, 16 if q else 512))
    guarded("resnet50 compiled bs1", lambda: vision_compiled("resnet50", 1))
    measure.log(f"done in {measure.elapsed():.1f} s")


if __name__ == "__main__":
    main()
