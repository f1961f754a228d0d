#!/usr/bin/env python3
"""Measure zoo models on a real GPU with PyTorch, for checking capcalc's predictions.

Each measurement is one JSON line in OUT/results.jsonl, already in the terms of capcalc's
validation set (data/validation/README.md): the zoo model file, its dims, precision, mode,
profile, metric and value in SI units. bench/device/make_cases.py turns the lines into a
measurement file that `capcalc validate --measurements` reads.

What is run, and how it maps onto capcalc:
  - Models are built from the zoo's own definitions: torchvision's resnet50, mobilenet_v2 and
    vit_b_16 (random weights), and Hugging Face transformers models built from the zoo's
    config.json files (bert_base_hf.json, gpt2_hf.json, llama2_7b_hf.json), random weights.
    Nothing is downloaded.
  - Inference: the model cast to fp16/bf16 (capcalc's --precision fp16/bf16), or fp32 with
    TF32 off in cuDNN and cuBLAS (--precision fp32), or fp32 with TF32 on (--precision tf32);
    CNNs in channels_last for 16-bit; torch.inference_mode. latency_s is the median of timed
    calls, each synchronised, so it is the time one batch takes end to end on the GPU.
  - Training: fp32 weights under torch.autocast(bfloat16) (capcalc's mixed precision
    --precision bf16 --mode training), or fp32 with TF32 (--precision tf32); SGD with momentum
    for the CNNs, AdamW for the transformers; synthetic data already on the GPU (no input
    pipeline). throughput_per_s is batch / median step time.
  - LLM serving: model.generate with greedy decoding and min_new_tokens = max_new_tokens (no
    early stop), the KV cache as transformers keeps it. ttft_s is generate() for one new token
    (prefill + one step); inter_token_latency_s is (generate(O) - generate(1)) / (O - 1);
    request_latency_s is generate(O).
  - profile is "eager" for plain PyTorch, "inductor" for torch.compile's default mode and
    "compiled" for its CUDA-graph mode ("reduce-overhead"): capcalc's profiles.

Usage: python3 bench/device/measure.py OUT_DIR [--budget-s SECONDS] [--quick] [--only A,B]
--quick shrinks every model and batch so that the script can be dry-run on a CPU; --only runs
the groups whose names contain one of the comma-separated parts (a repeat on another machine).
Groups are skipped once the budget would be exceeded.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "data", "models")

args = None
out_file = None
log_file = None
start_time = time.perf_counter()
device = "cuda"


def log(*parts):
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    log_file.write(line + "\n")
    log_file.flush()


def elapsed():
    return time.perf_counter() - start_time


def sync():
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn, min_iters=5, max_iters=30, min_total_s=0.5, warmup=3):
    """Median seconds of fn() over synchronised calls, after warm-up calls."""
    for _ in range(warmup):
        fn()
    sync()
    times = []
    total = 0.0
    while len(times) < max_iters and (len(times) < min_iters or total < min_total_s):
        t0 = time.perf_counter()
        fn()
        sync()
        dt = time.perf_counter() - t0
        times.append(dt)
        total += dt
    return statistics.median(times), len(times)


def record(**fields):
    fields.setdefault("device", "h200")
    fields.setdefault("devices", 1)
    fields["elapsed_s"] = round(elapsed(), 1)
    out_file.write(json.dumps(fields) + "\n")
    out_file.flush()
    log(json.dumps(fields))


def set_tf32(enabled):
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32,
          "tf32": torch.float32}


def guarded(name, fn, need_s=0.0):
    """Runs one group of measurements; a failure is logged and the rest go on."""
    if args.only and not any(part in name for part in args.only.split(",")):
        return
    left = args.budget_s - elapsed()
    if left < need_s:
        log(f"skip {name}: {left:.0f} s left of the budget, needs {need_s:.0f}")
        return
    log(f"== {name} (at {elapsed():.1f} s)")
    try:
        fn()
    except Exception:  # noqa: BLE001 - report and go on with the next group
        log(f"FAILED {name}:\n{traceback.format_exc()}")
    finally:
        if device == "cuda":
            torch.cuda.empty_cache()


# ---------------------------------------------------------------- ceilings


def ceilings():
    n = 256 if args.quick else 8192
    for name, dtype, tf32 in [("bf16", torch.bfloat16, False), ("fp16", torch.float16, False),
                              ("tf32", torch.float32, True), ("fp32", torch.float32, False)]:
        set_tf32(tf32)
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        t, iters = timed(lambda: a @ b, min_iters=5, max_iters=20, min_total_s=0.2)
        record(kind="ceiling", what=f"matmul {n}x{n}x{n} {name}",
               flop_per_s=2 * n**3 / t, seconds=t, iters=iters)
        del a, b
    set_tf32(False)
    elems = (1 << 16) if args.quick else (1 << 30)  # 2 GiB of bf16 each way
    src = torch.empty(elems, device=device, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    t, iters = timed(lambda: dst.copy_(src), min_iters=5, max_iters=20, min_total_s=0.2)
    record(kind="ceiling", what="device copy (bytes read + written)",
           bytes_per_s=2 * src.numel() * src.element_size() / t, seconds=t, iters=iters)
    del src, dst


# ---------------------------------------------------------------- vision


def vision_model(name):
    import torchvision
    builders = {"resnet50": torchvision.models.resnet50,
                "mobilenet_v2": torchvision.models.mobilenet_v2,
                "vit_b_16": torchvision.models.vit_b_16}
    return builders[name](weights=None)


def image_batch(batch, dtype, channels_last, size=224):
    size = 64 if args.quick and size != 224 else size
    x = torch.randn(batch, 3, size, size, device=device, dtype=dtype)
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


def image_size(name):
    """ViT's position embedding is for 224x224 only; the CNNs take smaller images when quick."""
    return 224 if name == "vit_b_16" or not args.quick else 64


def vision_inference(name, precision, batches):
    set_tf32(precision == "tf32")
    torch.backends.cudnn.benchmark = True
    dtype = DTYPES[precision]
    channels_last = precision in ("fp16", "bf16") and name != "vit_b_16"
    model = vision_model(name).to(device=device, dtype=dtype).eval()
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    for batch in batches:
        x = image_batch(batch, dtype, channels_last, image_size(name))
        with torch.inference_mode():
            t, iters = timed(lambda: model(x))
        record(kind="case", model=f"{name}.json", dims={"batch": batch}, precision=precision,
               mode="inference", metric="latency_s", value=t, unit="s", per=None,
               profile="eager", iters=iters, channels_last=channels_last,
               samples_per_s=batch / t)
    del model


def vision_training(name, precision, batches):
    set_tf32(precision == "tf32")
    torch.backends.cudnn.benchmark = True
    channels_last = precision == "bf16" and name != "vit_b_16"
    model = vision_model(name).to(device=device).train()
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    for batch in batches:
        x = image_batch(batch, torch.float32, channels_last, image_size(name))
        y = torch.randint(0, 1000, (batch,), device=device)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device, dtype=torch.bfloat16,
                                enabled=precision == "bf16"):
                loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()

        t, iters = timed(step, min_iters=5, max_iters=20)
        record(kind="case", model=f"{name}.json", dims={"batch": batch}, precision=precision,
               mode="training", metric="throughput_per_s", value=batch / t, unit="images/s",
               per="total", profile="eager", iters=iters, step_s=t,
               channels_last=channels_last, optimizer="sgd momentum 0.9")
    del model, opt


def vision_compiled(name, precision, batches, mode="default"):
    set_tf32(False)
    dtype = DTYPES[precision]
    model = vision_model(name).to(device=device, dtype=dtype).eval()
    model = model.to(memory_format=torch.channels_last)
    compiled = torch.compile(model, mode=None if mode == "default" else mode)
    for batch in batches:
        x = image_batch(batch, dtype, True)
        with torch.inference_mode():
            t0 = time.perf_counter()
            compiled(x)
            sync()
            compile_s = time.perf_counter() - t0
            t, iters = timed(lambda: compiled(x))
        record(kind="case", model=f"{name}.json", dims={"batch": batch}, precision=precision,
               mode="inference", metric="latency_s", value=t, unit="s", per=None,
               profile="inductor" if mode == "default" else "compiled", iters=iters,
               compile_s=compile_s,
               software_extra=COMPILE_MODES[mode], compile_mode=mode,
               samples_per_s=batch / t)
    del model, compiled


COMPILE_MODES = {
    "default": "torch.compile default mode (Inductor, no CUDA graphs)",
    "reduce-overhead": "torch.compile mode=\"reduce-overhead\" (Inductor, replayed as CUDA graphs)",
}


# ---------------------------------------------------------------- transformers


def hf_config(file_name):
    import transformers
    with open(os.path.join(MODELS, file_name)) as f:
        raw = json.load(f)
    raw.pop("torch_dtype", None)
    raw.pop("transformers_version", None)
    config = transformers.AutoConfig.for_model(raw.pop("model_type"), **raw)
    if args.quick:
        for key in ("num_hidden_layers", "n_layer"):
            if hasattr(config, key):
                setattr(config, key, 2)
    return config


def hf_model(file_name, cls_name, dtype):
    import transformers
    config = hf_config(file_name)
    cls = getattr(transformers, cls_name)
    with torch.device(device):  # Initialised on the GPU in fp32, then cast.
        model = cls(config).to(dtype)
    attn = getattr(model.config, "_attn_implementation", None)
    log(f"{file_name}: {cls_name}, {sum(p.numel() for p in model.parameters()):,} params, "
        f"attention {attn}")
    return model, config


def tokens(batch, seq, vocab):
    return torch.randint(0, vocab, (batch, seq), device=device)


def bert_inference(precision, seq, batches):
    set_tf32(False)
    model, config = hf_model("bert_base_hf.json", "BertForMaskedLM", DTYPES[precision])
    model.eval()
    for batch in batches:
        ids = tokens(batch, seq, config.vocab_size)
        mask = torch.ones_like(ids)
        with torch.inference_mode():
            t, iters = timed(lambda: model(input_ids=ids, attention_mask=mask))
        record(kind="case", model="bert_base_hf.json", dims={"batch": batch, "seq": seq},
               precision=precision, mode="inference", metric="latency_s", value=t, unit="s",
               per=None, profile="eager", iters=iters, samples_per_s=batch / t,
               attention=model.config._attn_implementation)
    del model


def lm_training(file_name, cls_name, seq, batches, label):
    set_tf32(False)
    model, config = hf_model(file_name, cls_name, torch.float32)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for batch in batches:
        ids = tokens(batch, seq, config.vocab_size)
        mask = torch.ones_like(ids)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device, dtype=torch.bfloat16):
                loss = model(input_ids=ids, attention_mask=mask, labels=ids).loss
            loss.backward()
            opt.step()

        t, iters = timed(step, min_iters=5, max_iters=20)
        record(kind="case", model=file_name, dims={"batch": batch, "seq": seq},
               precision="bf16", mode="training", metric="throughput_per_s",
               value=batch / t, unit="sequences/s", per="total", profile="eager",
               iters=iters, step_s=t, tokens_per_s=batch * seq / t, optimizer="AdamW",
               attention=model.config._attn_implementation, objective=label)
    del model, opt


def generate_s(model, ids, new_tokens):
    mask = torch.ones_like(ids)
    with torch.inference_mode():
        model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens,
                       min_new_tokens=new_tokens, do_sample=False, pad_token_id=0)


def serving(file_name, cls_name, precision, prompt, output, batches, reps=3):
    set_tf32(False)
    model, config = hf_model(file_name, cls_name, DTYPES[precision])
    model.eval()
    for batch in batches:
        ids = tokens(batch, prompt, config.vocab_size)
        one, _ = timed(lambda: generate_s(model, ids, 1), min_iters=reps, max_iters=reps,
                       min_total_s=0, warmup=1)
        full, _ = timed(lambda: generate_s(model, ids, output), min_iters=reps,
                        max_iters=reps, min_total_s=0, warmup=1)
        itl = (full - one) / (output - 1)
        common = dict(kind="case", model=file_name, dims={"batch": batch}, precision=precision,
                      mode="inference", per=None, profile="eager", prompt_tokens=prompt,
                      output_tokens=output, reps=reps,
                      attention=model.config._attn_implementation)
        record(metric="ttft_s", value=one, unit="s", **common)
        record(metric="inter_token_latency_s", value=itl, unit="s", **common)
        record(metric="request_latency_s", value=full, unit="s", **common)
    del model


# ---------------------------------------------------------------- main


def environment():
    info = {"kind": "environment", "python": platform.python_version(),
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if device == "cuda" else None,
            "host": platform.node(), "cpu": platform.processor(),
            "cpus": os.cpu_count()}
    try:
        import torchvision
        info["torchvision"] = torchvision.__version__
    except ImportError:
        pass
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except ImportError:
        pass
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name()
        props = torch.cuda.get_device_properties(0)
        info["sms"] = props.multi_processor_count
        info["memory_bytes"] = props.total_memory
        try:
            info["nvidia_smi"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,"
                 "power.limit,temperature.gpu", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception as e:  # noqa: BLE001
            info["nvidia_smi"] = f"failed: {e}"
    try:
        with open("/proc/cpuinfo") as f:
            names = [l.split(":", 1)[1].strip() for l in f if l.startswith("model name")]
        info["cpu"] = names[0] if names else info["cpu"]
    except OSError:
        pass
    record(**info)


def main():
    global args, out_file, log_file, device
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--budget-s", type=float, default=330)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="",
                        help="comma-separated parts of group names: run only those groups")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    out_file = open(os.path.join(args.out, "results.jsonl"), "w")
    log_file = open(os.path.join(args.out, "log.txt"), "w")
    if not torch.cuda.is_available():
        if not args.quick:
            sys.exit("no CUDA device; use --quick for a CPU dry run")
        device = "cpu"
    q = args.quick
    environment()
    guarded("ceilings", ceilings)
    guarded("resnet50 inference fp16",
            lambda: vision_inference("resnet50", "fp16", [1, 8] if q else [1, 8, 32, 128, 256]))
    guarded("resnet50 inference fp32",
            lambda: vision_inference("resnet50", "fp32", [1] if q else [1, 32, 256]))
    guarded("resnet50 inference tf32",
            lambda: vision_inference("resnet50", "tf32", [2] if q else [256]))
    guarded("resnet50 training bf16",
            lambda: vision_training("resnet50", "bf16", [2] if q else [64, 256]))
    guarded("resnet50 training tf32",
            lambda: vision_training("resnet50", "tf32", [2] if q else [256]))
    guarded("bert-base inference fp16",
            lambda: bert_inference("fp16", 128, [1, 4] if q else [1, 8, 64, 256]))
    guarded("llama-2-7b serving bf16",
            lambda: serving("llama2_7b_hf.json", "LlamaForCausalLM", "bf16", 16 if q else 512,
                            4 if q else 128, [1, 2] if q else [1, 16, 64], reps=1 if q else 2),
            need_s=60)
    guarded("gpt2 training bf16",
            lambda: lm_training("gpt2_hf.json", "GPT2LMHeadModel", 32 if q else 1024,
                                [2] if q else [16], "causal LM"), need_s=30)
    guarded("bert-base training bf16",
            lambda: lm_training("bert_base_hf.json", "BertForMaskedLM", 128, [2] if q else [64],
                                "masked LM on every token"), need_s=20)
    guarded("vit_b_16 inference fp16",
            lambda: vision_inference("vit_b_16", "fp16", [1] if q else [1, 64, 256]), need_s=15)
    guarded("vit_b_16 training bf16",
            lambda: vision_training("vit_b_16", "bf16", [2] if q else [128]), need_s=15)
    guarded("mobilenet_v2 inference fp16",
            lambda: vision_inference("mobilenet_v2", "fp16", [1] if q else [1, 256]), need_s=10)
    guarded("mobilenet_v2 training bf16",
            lambda: vision_training("mobilenet_v2", "bf16", [2] if q else [256]), need_s=10)
    guarded("gpt2 serving bf16",
            lambda: serving("gpt2_hf.json", "GPT2LMHeadModel", "bf16", 16 if q else 128,
                            4 if q else 128, [1] if q else [1, 32], reps=1 if q else 2),
            need_s=20)
    guarded("resnet50 torch.compile fp16",
            lambda: vision_compiled("resnet50", "fp16", [1] if q else [1, 64]), need_s=90)
    guarded("resnet50 torch.compile reduce-overhead fp16",
            lambda: vision_compiled("resnet50", "fp16", [1] if q else [1, 64], "reduce-overhead"),
            need_s=90)
    log(f"done in {elapsed():.1f} s")


if __name__ == "__main__":
    main()
