#!/usr/bin/env python3
"""Turn measure.py's results.jsonl into a capcalc measurement file.

Usage: python3 bench/device/make_cases.py OUT.json --date YYYY-MM-DD RUN.jsonl [RUN.jsonl ...]

Every "case" line becomes one measurement (data/validation/README.md's format) whose `quote`
is the raw line itself and whose `software` comes from the run's environment line. A workload
measured again in a later run (on another lease of the same kind of machine) keeps the first
run's value; the repeat and its difference go into `notes`, as the measurement's spread. The
cases are held out (capcalc's parameters were fixed before they were measured and are never
fitted on them), except those in IN_SAMPLE.

torch.compile's default mode (Inductor's Python wrapper launching each kernel, no CUDA graphs)
is capcalc's "inductor" profile; its CUDA-graph mode ("reduce-overhead") is "compiled". measure.py
wrote "compiled" for both before the inductor profile existed: case_profile maps them.
"""

import argparse
import json
import os

SOURCE = "bench/device/measure.py in this repository, run on a lent one-GPU H200 machine"

# Cases whose errors were in view when a modelling choice that moves them was made.
IN_SAMPLE_REASON = (
    "Not held out: capcalc's inductor profile (torch.compile's default mode: fused as compiled, "
    "each kernel at the eager floor) was added after this case's error under the compiled "
    "profile was known, and its choice of floor was made with this case in view.")
IN_SAMPLE = {
    "measured-resnet50-h200-infer-fp16-bs1-lat-compiled": IN_SAMPLE_REASON,
    "measured-resnet50-h200-infer-fp16-bs64-lat-compiled": IN_SAMPLE_REASON,
}


# The runtime each case ran (data/runtimes.json). Its kernel counts were counted in the
# runtimes' source code, but its host cost per kernel (pytorch-eager, torch-compile) was chosen
# on these cases' latency over their measured kernel counts, and torch.compile's two kernels per
# matrix layer with its measured kernel count in view: with a runtime, no case is held out.
RUNTIMES = {"eager": "pytorch-eager", "inductor": "torch-compile",
            "compiled": "torch-compile-cudagraphs"}
RUNTIME_REASON = (
    "Not held out: it runs as runtime {runtime}, whose host cost per kernel or kernel counts "
    "were chosen with this set's measurements in view (data/runtimes.json says how).")


def case_profile(line):
    if line["profile"] in ("compiled", "inductor") and \
            line.get("compile_mode", "default") == "default":
        return "inductor"
    return line["profile"]


def case_id(line):
    parts = [line["model"].removesuffix(".json").replace("_", "-"), "h200",
             "infer" if line["mode"] == "inference" else "train", line["precision"]]
    if "seq" in line["dims"]:
        parts.append(f"seq{line['dims']['seq']}")
    if "prompt_tokens" in line:
        parts.append(f"p{line['prompt_tokens']}-o{line['output_tokens']}")
    parts.append(f"bs{line['dims']['batch']}")
    metric = {"latency_s": "lat", "throughput_per_s": "tput", "ttft_s": "ttft",
              "inter_token_latency_s": "itl", "request_latency_s": "req"}[line["metric"]]
    parts.append(metric)
    if line["profile"] != "eager":
        parts.append("compiled")  # Ids predate the inductor profile: kept as they were.
        if line.get("compile_mode", "default") != "default":
            parts.append(line["compile_mode"])
    return "measured-" + "-".join(parts)


def notes(line):
    text = []
    if line["mode"] == "training":
        text.append(
            f"Synthetic data on the GPU (no input pipeline); {line.get('optimizer', '?')} "
            "(capcalc's validation predicts every training case with Adam: the update is under "
            "1 % of these steps)." if line["model"] != "bert_base_hf.json" else
            f"Synthetic data on the GPU; {line.get('optimizer')}; BertForMaskedLM's loss on "
            "every token.")
        if line["precision"] == "bf16":
            text.append("fp32 weights under torch.autocast(bfloat16): mixed precision.")
    else:
        text.append("Weights and activations cast to the precision" +
                    (", channels_last" if line.get("channels_last") else "") +
                    "; torch.inference_mode; median of synchronised calls.")
    if line["model"] == "bert_base_hf.json":
        text.append(
            "Run as BertForMaskedLM, the class the config names, while capcalc counts the config "
            "as BertModel (encoder and pooler, bert-base-uncased's 109,482,240 parameters): the "
            "run also computes the MLM head (768x768 transform and the 768x30522 vocabulary "
            "projection, 24.0 M MACs a token, +27.5 % over the encoder's 11.17 G MACs at 128 "
            "tokens), which the prediction leaves out.")
    if line["metric"] in ("ttft_s", "inter_token_latency_s", "request_latency_s"):
        text.append("transformers generate(), greedy, min_new_tokens = max_new_tokens; TTFT is "
                    "generate() of one token (prefill + one step), the inter-token latency "
                    "(generate(O) - generate(1)) / (O - 1). Random weights; "
                    f"attention {line.get('attention')}.")
    elif "attention" in line:
        text.append(f"Random weights; attention {line['attention']}.")
    else:
        text.append("Random weights.")
    if line["precision"] == "fp32":
        text.append("TF32 off in cuDNN and cuBLAS.")
    if line["profile"] != "eager":
        text.append(f"{line.get('software_extra', 'torch.compile')}; the first call "
                    f"(compilation) took {line.get('compile_s', 0):.0f} s and is not timed.")
    return " ".join(text)


def workload_key(line):
    return (line["model"], line["mode"], line["precision"], line["profile"],
            line.get("compile_mode", ""), json.dumps(line["dims"], sort_keys=True),
            line.get("prompt_tokens"), line.get("output_tokens"), line["metric"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--date", required=True)
    a = parser.parse_args()
    cases = {}
    repeats = {}
    for run in a.runs:
        lines = [json.loads(l) for l in open(run) if l.strip()]
        env = next(l for l in lines if l.get("kind") == "environment")
        software = (f"PyTorch {env['torch']} (CUDA {env['cuda']}, cuDNN {env.get('cudnn')}), "
                    f"torchvision {env.get('torchvision')}, transformers "
                    f"{env.get('transformers')}; {env.get('gpu')}, driver and clocks: "
                    f"{env.get('nvidia_smi')}; host CPU {env.get('cpu')}, {env.get('cpus')} "
                    "cores")
        for line in lines:
            if line.get("kind") != "case":
                continue
            key = workload_key(line)
            if key in cases:
                repeats.setdefault(key, []).append((run, line["value"]))
                continue
            case = {"id": case_id(line), "model": line["model"], "dims": line["dims"],
                    "device": line["device"], "devices": line["devices"],
                    "precision": line["precision"], "mode": line["mode"],
                    "metric": line["metric"], "value": line["value"], "unit": line["unit"],
                    "per": line["per"], "tokens": None}
            for k in ("prompt_tokens", "output_tokens"):
                if k in line:
                    case[k] = line[k]
            held_out = False
            runtime = RUNTIMES[case_profile(line)]
            case.update({"software": software, "profile": case_profile(line),
                         "runtime": runtime, "held_out": held_out,
                         "source": f"{SOURCE} ({a.date}); raw output: "
                                   f"data/validation/device/{os.path.basename(run)}",
                         "quote": json.dumps(line), "notes": notes(line)})
            if case["id"] in IN_SAMPLE:
                case["notes"] += " " + IN_SAMPLE[case["id"]]
            case["notes"] += " " + RUNTIME_REASON.format(runtime=runtime)
            cases[key] = case
    for key, values in repeats.items():
        case = cases[key]
        for run, value in values:
            case["notes"] += (f" Measured again on another lease ({os.path.basename(run)}): "
                              f"{value:.4g}, {100 * (value / case['value'] - 1):+.0f} %.")
    doc = {"schema_version": 1,
           "description": (
               "Measurements made by capcalc's developers, not published figures: zoo models "
               f"run with PyTorch on one H200 on {a.date} by bench/device/measure.py. Kept apart "
               "from measurements.json (published figures only). Each case names the runtime "
               "it ran; no case is held out since the runtimes' host cost per kernel was "
               "chosen on this set (the notes say so). "
               "Read it with `capcalc validate --measurements "
               "data/validation/measured_h200.json`."),
           "cases": list(cases.values())}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"{len(cases)} cases, {len(repeats)} measured twice, written to {a.out}")


if __name__ == "__main__":
    main()
