#!/usr/bin/env python3
"""Export zoo models to ONNX as users do, for checking capcalc's ONNX import on real exports.

torch.onnx.export (the TorchScript exporter, opset 17, eval mode, constant folding on, dynamic
batch and sequence axes) of torchvision's resnet50, mobilenet_v2 and vit_b_16 and of Hugging
Face's BertModel and GPT2LMHeadModel built from the zoo's config.json files (random weights;
counts do not depend on the values). Each model is saved again with its weights as external
data, and only the graph file is kept: capcalc counts without the weights. The IR version is
set to 8, the one opset 17 belongs to, so that Debian's ONNX 1.12 reads the files.

OUT_DIR/exports.json records, per file, the exporter, the opset, the initializer element count
(the parameters as ONNX stores them) and the reference figures to compare with.

Usage: python3 bench/device/export_onnx.py OUT_DIR
"""

import json
import os
import shutil
import sys
import traceback

import onnx
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def hf(file_name, cls_name):
    import transformers
    with open(os.path.join(ROOT, "data", "models", file_name)) as f:
        raw = json.load(f)
    raw.pop("torch_dtype", None)
    raw.pop("transformers_version", None)
    config = transformers.AutoConfig.for_model(raw.pop("model_type"), **raw)
    config.use_cache = False
    return getattr(transformers, cls_name)(config).eval()


def vision(name):
    import torchvision
    return getattr(torchvision.models, name)(weights=None).eval()


def export(out, name, model, args, input_names, dynamic_axes, record):
    tmp = f"/tmp/export_{name}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    full = os.path.join(tmp, "full.onnx")
    kwargs = dict(opset_version=17, input_names=input_names, dynamic_axes=dynamic_axes,
                  do_constant_folding=True)
    try:
        torch.onnx.export(model, args, full, dynamo=False, **kwargs)
        exporter = "torch.onnx.export(dynamo=False), TorchScript exporter"
    except TypeError as e:
        if "dynamo" in str(e):  # A torch without the argument: the TorchScript exporter anyway.
            torch.onnx.export(model, args, full, **kwargs)
            exporter = "torch.onnx.export, TorchScript exporter"
        else:  # The TorchScript exporter failed on the model: torch.export's exporter.
            torch.onnx.export(model, args, full, dynamo=True, **kwargs)
            exporter = (f"torch.onnx.export(dynamo=True), torch.export-based exporter "
                        f"(the TorchScript exporter failed: {str(e)[:120]})")
    m = onnx.load(full)
    m.ir_version = 8
    elements = 0
    for init in m.graph.initializer:
        n = 1
        for d in init.dims:
            n *= d
        elements += n
    graph_dir = os.path.join(tmp, "graph")
    os.makedirs(graph_dir)
    onnx.save_model(m, os.path.join(graph_dir, f"{name}.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=f"{name}.onnx.data",
                    size_threshold=1024)
    shutil.copy(os.path.join(graph_dir, f"{name}.onnx"), os.path.join(out, f"{name}.onnx"))
    entry = dict(file=f"{name}.onnx", exporter=exporter, torch=torch.__version__,
                 onnx=onnx.__version__, opset=17, ir_version=8,
                 nodes=len(m.graph.node), initializers=len(m.graph.initializer),
                 initializer_elements=elements,
                 torch_parameters=sum(p.numel() for p in model.parameters()),
                 graph_bytes=os.path.getsize(os.path.join(out, f"{name}.onnx")), **record)
    print(json.dumps(entry), flush=True)
    return entry


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    entries = []
    image = torch.randn(1, 3, 224, 224)
    ids = torch.randint(0, 1000, (1, 128))
    jobs = [
        ("resnet50", lambda: vision("resnet50"), (image,), ["input"], {"input": {0: "batch"}},
         {"reference": "torchvision docs: 25,557,032 params, 4.09 GFLOPS (MACs) at 224x224"}),
        ("mobilenet_v2", lambda: vision("mobilenet_v2"), (image,), ["input"],
         {"input": {0: "batch"}},
         {"reference": "torchvision docs: 3,504,872 params, 0.30 GFLOPS (MACs) at 224x224"}),
        ("vit_b_16", lambda: vision("vit_b_16"), (image,), ["input"], {"input": {0: "batch"}},
         {"reference": "torchvision docs: 86,567,656 params, 17.56 GFLOPS (MACs) at 224x224"}),
        ("bert_base", lambda: hf("bert_base_hf.json", "BertModel"),
         (ids, torch.ones_like(ids)), ["input_ids", "attention_mask"],
         {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}},
         {"reference": "bert-base-uncased BertModel: 109,482,240 params"}),
        ("gpt2", lambda: hf("gpt2_hf.json", "GPT2LMHeadModel"), (ids,), ["input_ids"],
         {"input_ids": {0: "batch", 1: "sequence"}},
         {"reference": "GPT-2 (124M): 124,439,808 params"}),
    ]
    for name, build, args, input_names, axes, record in jobs:
        try:
            with torch.no_grad():
                entries.append(export(out, name, build(), args, input_names, axes, record))
        except Exception:  # noqa: BLE001 - report and go on
            print(f"FAILED {name}:\n{traceback.format_exc()}", flush=True)
    with open(os.path.join(out, "exports.json"), "w") as f:
        json.dump(entries, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
