#!/usr/bin/env python3
"""Export every torchvision classification model, a BERT-style encoder and a GPT-style decoder
to ONNX, without their weights, for tests/exports/torch113/.

Made for Debian 12's python3-torch 1.13 and python3-torchvision 0.14 (the TorchScript exporter,
opset 17, eval mode, constant folding on). Each model is exported twice: with a dynamic batch
axis ("<name>.dyn.onnx"; the encoder and decoder also a dynamic sequence axis) and with fixed
shapes at batch 1 ("<name>.fixed.onnx"). Every floating-point tensor over 1 KiB (initializers
and Constant attributes) is then marked as external data in "<name>.data" and its values are
dropped; the .data file is never written: capcalc counts from the dims.

Per file, exports.json records the exporter and versions, node and initializer counts, the
weight elements the file holds, the model's own parameter count, torchvision's documented
figures (its weights' meta: num_params, and _ops in GFLOPS = GMACs where this torchvision
has it), and an independent MAC count: one forward pass at batch 1 under a TorchDispatchMode
that adds M*N*K for every aten mm/addmm/bmm/baddbmm and out_elements * in_channels/groups *
kernel for every aten convolution (torchvision's docs count GFLOPS the same way), in all and of
the products with an operand computed from the input (torch_input_macs_batch1: what an ONNX
graph computes per sample once products on constants are folded at load).

Usage: python3 tools/export_torch_onnx.py OUT_DIR [NAME ...]
       (each model runs in its own process; NAME limits the run to those models)
       python3 tools/export_torch_onnx.py --recount OUT_DIR [NAME ...]
       (counts again and records both counts in OUT_DIR/exports.json, exporting nothing)
"""

import inspect
import json
import math
import os
import subprocess
import sys
import tempfile
import time

ENCODER = "bert_style_encoder"
DECODER = "gpt_style_decoder"


def classification_builders():
    import torchvision.models as models
    names = []
    if hasattr(models, "list_models"):
        try:
            names = list(models.list_models(module=models))
        except TypeError:
            names = list(models.list_models())
    if not names:
        for name, fn in vars(models).items():
            if (inspect.isfunction(fn) and name[0].islower() and not name.startswith("get_")
                    and fn.__module__.count(".") == 2  # torchvision.models.<family>
                    and "weights" in inspect.signature(fn).parameters):
                names.append(name)
    return sorted(names)


def weights_enum(name):
    import torchvision.models as models
    if hasattr(models, "get_model_weights"):
        return models.get_model_weights(name)
    from torchvision.models import _api
    return _api._get_enum_from_fn(getattr(models, name))


# -- Independent MAC count ---------------------------------------------------------------------

def count_macs(model, args):
    """Returns (all, on_input): the MACs of every product torch runs, and of those with an
    operand computed from the model's input. The others run on constants only (Swin V2's
    position-bias MLP on its table of relative coordinates): an ONNX graph computes them from
    initializers, and ONNX Runtime, like capcalc, folds them once at load time."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    aten = torch.ops.aten

    def from_input(t):
        return isinstance(t, torch.Tensor) and getattr(t, "_from_input", False)

    class Counter(TorchDispatchMode):
        macs = 0
        input_macs = 0

        def __torch_dispatch__(self, func, types, a=(), kwargs=None):
            out = func(*a, **(kwargs or {}))
            op = func.overloadpacket
            macs = 0
            if op is aten.convolution:
                w = a[1]
                macs = out.numel() * w.shape[1] * math.prod(w.shape[2:])
            elif op is aten.mm:
                macs = a[0].shape[0] * a[0].shape[1] * a[1].shape[1]
            elif op is aten.addmm:
                macs = a[1].shape[0] * a[1].shape[1] * a[2].shape[1]
            elif op is aten.bmm:
                macs = a[0].shape[0] * a[0].shape[1] * a[0].shape[2] * a[1].shape[2]
            elif op is aten.baddbmm:
                macs = a[1].shape[0] * a[1].shape[1] * a[1].shape[2] * a[2].shape[2]
            operands = [t for t in list(a) + list((kwargs or {}).values())
                        for t in (t if isinstance(t, (list, tuple)) else [t])]
            dependent = any(from_input(t) for t in operands)
            Counter.macs += macs
            if dependent:
                Counter.input_macs += macs
                for t in out if isinstance(out, (list, tuple)) else [out]:
                    if isinstance(t, torch.Tensor):
                        t._from_input = True
            return out

    inputs = [t.clone() for t in args]
    for t in inputs:
        t._from_input = True
    # Gradients on: nn.MultiheadAttention's fused inference path (one opaque op) stays off.
    with torch.enable_grad(), Counter():
        model(*inputs)
    return Counter.macs, Counter.input_macs


# -- torch.nn transformers ---------------------------------------------------------------------

def transformer_models():
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, d, heads, causal):
            super().__init__()
            self.heads, self.causal = heads, causal
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

        def forward(self, x):
            b, s, d = x.shape
            split = lambda t: t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
            if self.causal:
                mask = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
                scores = scores.masked_fill(mask, float("-inf"))
            context = scores.softmax(-1) @ v
            return self.o(context.transpose(1, 2).reshape(b, s, d))

    class Block(nn.Module):
        def __init__(self, d, heads, ff, causal):
            super().__init__()
            self.causal = causal
            self.attn = Attention(d, heads, causal)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

        def forward(self, x):
            if self.causal:  # Pre-norm, as GPT-2.
                x = x + self.attn(self.ln1(x))
                return x + self.ff(self.ln2(x))
            x = self.ln1(x + self.attn(x))  # Post-norm, as BERT.
            return self.ln2(x + self.ff(x))

    class Transformer(nn.Module):
        def __init__(self, vocab, positions, d, heads, ff, layers, causal):
            super().__init__()
            self.causal = causal
            self.tokens = nn.Embedding(vocab, d)
            self.positions = nn.Embedding(positions, d)
            self.norm = nn.LayerNorm(d)
            self.blocks = nn.ModuleList(Block(d, heads, ff, causal) for _ in range(layers))
            if causal:
                self.head = nn.Linear(d, vocab, bias=False)
                self.head.weight = self.tokens.weight  # Tied, as GPT-2.

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
            x = self.tokens(ids) + self.positions(pos)
            if not self.causal:
                x = self.norm(x)
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x)) if self.causal else x

    return {
        # BERT-base's sizes (30,522 tokens, 512 positions, 768 wide, 12 heads, 12 layers).
        ENCODER: lambda: Transformer(30522, 512, 768, 12, 3072, 12, causal=False),
        # GPT-2 (124M)'s sizes (50,257 tokens, 1,024 positions), its LM head tied.
        DECODER: lambda: Transformer(50257, 1024, 768, 12, 3072, 12, causal=True),
    }


# -- Export ------------------------------------------------------------------------------------

def all_tensors(graph):
    for init in graph.initializer:
        yield init
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from all_tensors(attr.g)
            for g in attr.graphs:
                yield from all_tensors(g)


FLOAT_TYPES = {1, 10, 11, 16}  # FLOAT, FLOAT16, DOUBLE, BFLOAT16.


def strip_weights(model, location):
    """Marks every float tensor over 1 KiB as external data at `location` and drops its values."""
    from onnx import mapping
    offset = 0
    for tensor in all_tensors(model.graph):
        if tensor.data_type not in FLOAT_TYPES:
            continue
        nbytes = math.prod(tensor.dims) * mapping.TENSOR_TYPE_TO_NP_TYPE[tensor.data_type].itemsize
        if nbytes <= 1024:
            continue
        for field in ("raw_data", "float_data", "double_data", "int32_data"):
            tensor.ClearField(field)
        del tensor.external_data[:]
        for key, value in (("location", location), ("offset", str(offset)),
                           ("length", str(nbytes))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        tensor.data_location = 1  # EXTERNAL
        offset += nbytes


def weight_elements(model):
    """Float initializers of rank >= 1: what capcalc reports as parameters."""
    total = 0
    for init in model.graph.initializer:
        if init.data_type in FLOAT_TYPES and len(init.dims) > 0:
            total += math.prod(init.dims)
    return total


def build(name):
    """The model, its example inputs, input and output names, axes and documented figures."""
    import torch
    # The values never matter: skip the models' own initialisation (minutes for the largest),
    # then fill every float tensor with distinct random values, so that the exporter finds no
    # equal initializers to store once.
    for fn in dir(torch.nn.init):
        if fn.endswith("_") and not fn.startswith("_"):
            setattr(torch.nn.init, fn, lambda t, *a, **k: t)
    documented = {}
    if name in (ENCODER, DECODER):
        model = transformer_models()[name]()
        args = (torch.randint(0, 1000, (1, 128)),)
        io = ["input_ids"], ["logits" if name == DECODER else "hidden_states"]
        axes = {io[0][0]: {0: "batch", 1: "sequence"}, io[1][0]: {0: "batch", 1: "sequence"}}
        shape = "[batch, sequence]; fixed [1, 128]"
    else:
        import torchvision.models as models
        builder = getattr(models, name)
        weights = weights_enum(name).DEFAULT
        size = weights.transforms().crop_size[0]
        kwargs = {"weights": None}
        if "image_size" in inspect.signature(builder).parameters or name.startswith("vit_"):
            kwargs["image_size"] = size
        if name in ("googlenet", "inception_v3"):
            # As their weights' builders leave them, whose num_params torchvision documents:
            # GoogLeNet without its auxiliary heads, Inception v3 with its one. In eval mode
            # neither runs an auxiliary head, so no graph holds one.
            kwargs["aux_logits"] = name == "inception_v3"
            kwargs["init_weights"] = False
        model = builder(**kwargs)
        args = (torch.randn(1, 3, size, size),)
        io = ["input"], ["logits"]
        axes = {"input": {0: "batch"}, "logits": {0: "batch"}}
        shape = f"[batch, 3, {size}, {size}]; fixed [1, 3, {size}, {size}]"
        documented = {"weights": str(weights), "num_params": weights.meta.get("num_params")}
        if "_ops" in weights.meta:
            documented["gflops"] = weights.meta["_ops"]
        documented["url"] = ("https://pytorch.org/vision/0.14/models/generated/"
                             f"torchvision.models.{name}.html")
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point():
                t.uniform_(0.5, 1.5)
    return model.eval(), args, io, axes, shape, documented


def register_missing_symbolics():
    """torch 1.13's exporter has no symbolic for aten::zero, which Swin V2 calls when it zeroes
    the keys' third of its qkv bias in place (torchvision's shifted_window_attention): a tensor
    of zeros of its input's shape is what it computes. Constant folding folds it away."""
    import torch
    from torch.onnx import symbolic_opset9
    torch.onnx.register_custom_op_symbolic(
        "aten::zero", lambda g, self: symbolic_opset9.zeros_like(g, self), 17)


def export_one(out, name):
    import onnx
    import torch
    import torchvision
    register_missing_symbolics()
    model, args, (inputs, outputs), axes, shape, documented = build(name)
    params = sum(p.numel() for p in model.parameters())
    start = time.time()
    macs, input_macs = count_macs(model, args)
    entries = []
    variants = [("dyn", axes), ("fixed", None)]
    fixed_only_for = os.environ.get("FIXED_MODELS")  # A representative set, to save time.
    if fixed_only_for is not None and name not in fixed_only_for.split(","):
        variants = variants[:1]
    if os.environ.get("VARIANTS") == "fixed":  # A later run adding the fixed-shape files.
        variants = variants[1:]
    for variant, dynamic in variants:
        file = f"{name}.{variant}.onnx"
        entry = dict(file=file, model=name, variant="dynamic batch" if dynamic else "fixed shapes",
                     input_shape=shape.split("; ")[0 if dynamic else 1].replace("fixed ", ""))
        with tempfile.TemporaryDirectory() as tmp:
            full = os.path.join(tmp, "full.onnx")
            try:
                # Gradients on, as in count_macs: under no_grad, torch 1.13's
                # nn.MultiheadAttention takes its fused path, which the exporter cannot write
                # (aten::_native_multi_head_attention: ViT).
                torch.onnx.export(model, args, full, opset_version=17, input_names=inputs,
                                  output_names=outputs, dynamic_axes=dynamic,
                                  do_constant_folding=True)
                m = onnx.load(full)  # Models over 2 GB come with their data beside: loaded too.
            except Exception as e:  # noqa: BLE001 - recorded, and the run goes on
                entry["status"] = f"export failed: {type(e).__name__}: {str(e)[:300]}"
                entries.append(entry)
                continue
        m.ir_version = 8  # Opset 17's IR version, so that Debian's ONNX 1.12 reads the file.
        elements = weight_elements(m)
        strip_weights(m, f"{name}.{variant}.data")
        path = os.path.join(out, file)
        onnx.save_model(m, path)
        entry.update(
            status="exported",
            exporter="torch.onnx.export (TorchScript exporter), opset 17, constant folding",
            torch=torch.__version__, torchvision=torchvision.__version__, onnx=onnx.__version__,
            opset=17, ir_version=8, nodes=len(m.graph.node), initializers=len(m.graph.initializer),
            initializer_elements=elements, torch_parameters=params,
            torch_macs_batch1=macs, torch_input_macs_batch1=input_macs,
            torch_macs_method="aten mm/addmm/bmm/baddbmm/convolution MACs in one forward pass "
                              "at batch 1 under a TorchDispatchMode (tools/export_torch_onnx.py); "
                              "torch_input_macs_batch1: those with an operand computed from the "
                              "input",
            graph_bytes=os.path.getsize(path), **({"documented": documented} if documented else {}))
        entries.append(entry)
    print(json.dumps({"model": name, "seconds": round(time.time() - start, 1)}), file=sys.stderr)
    return entries


def recount(out, names):
    """Counts each model of OUT/exports.json again (or those named) and records both counts in
    every entry of it: for an index written before torch_input_macs_batch1 was counted."""
    index = os.path.join(out, "exports.json")
    entries = json.load(open(index))
    names = names or sorted({e["model"] for e in entries if "model" in e})
    for name in names:
        register_missing_symbolics()
        model, args, *_ = build(name)
        macs, input_macs = count_macs(model, args)
        for e in entries:
            if e.get("model") != name or e.get("status") != "exported" and "torch_macs_batch1" not in e:
                continue
            if e.get("torch_macs_batch1", macs) != macs:
                sys.exit(f"{e['file']}: torch_macs_batch1 {e['torch_macs_batch1']} != {macs}")
            e["torch_macs_batch1"] = macs
            e["torch_input_macs_batch1"] = input_macs
            e["torch_macs_method"] = (
                "aten mm/addmm/bmm/baddbmm/convolution MACs in one forward pass at batch 1 under "
                "a TorchDispatchMode (tools/export_torch_onnx.py); torch_input_macs_batch1: those "
                "with an operand computed from the input")
        print(json.dumps({"model": name, "macs": macs, "input_macs": input_macs}), flush=True)
        with open(index, "w") as f:  # After each model: a stopped run keeps what it counted.
            json.dump(entries, f, indent=1)
            f.write("\n")


def table(index):
    """tests/exports/README.md's table, from exports.json."""
    rows = ["| model | input | dynamic batch | fixed shapes | parameters (torch) | weights in file "
            "| MACs at batch 1 (torch) | of them on constants | torchvision docs |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    by_model = {}
    for e in json.load(open(index)):
        if "model" in e:
            by_model.setdefault(e["model"], {})[e["file"].split(".")[-2]] = e
    for name, variants in sorted(by_model.items()):
        any_entry = next(iter(variants.values()))
        ok = {v: e for v, e in variants.items() if e.get("status") == "exported"}
        first = ok.get("dyn") or ok.get("fixed") or any_entry

        def cell(v):
            if v not in ok:
                return variants[v]["status"] if v in variants else "not kept"
            return "`" + variants[v]["file"] + "`" + (" (in `large.tar.xz`)"
                                                      if "archive" in variants[v] else "")

        doc = first.get("documented", {})
        docs = (f"{doc['num_params']:,} params" if doc.get("num_params") else "")
        if "gflops" in doc:
            docs += f", {doc['gflops']} GFLOPS"
        macs = first.get("torch_macs_batch1", 0)
        constant = macs - first.get("torch_input_macs_batch1", macs)
        rows.append(f"| {name} | {first.get('input_shape', '')} | {cell('dyn')} | {cell('fixed')} | "
                    f"{first.get('torch_parameters', 0):,} | {first.get('initializer_elements', 0):,} | "
                    f"{macs:,} | {f'{constant:,}' if constant else ''} | {docs} |")
    print("\n".join(rows))


def run_children(out, names, log):
    """Exports `names` in child processes, one after another in each, until all are done; a
    child that dies (out of memory, a crash) costs the model it was on, not the others."""
    results = {}
    todo = list(names)
    while todo:
        child = subprocess.Popen([sys.executable, __file__, "--one", out] + todo,
                                 stdout=subprocess.PIPE, stderr=log, text=True)
        for line in child.stdout:
            entries = json.loads(line)
            results[entries[0]["model"]] = entries
            with open(os.path.join(out, "export.jsonl"), "a") as f:  # Kept if the run stops.
                f.write(line)
            print(json.dumps([(e["file"], e["status"]) for e in entries]), flush=True)
        child.wait()
        done = [n for n in todo if n in results]
        todo = [n for n in todo if n not in results]
        if todo and child.returncode != 0:  # The first one left killed the child.
            name = todo.pop(0)
            results[name] = [dict(file=f"{name}.{v}.onnx", model=name,
                                  status=f"export failed: the exporting process died "
                                         f"(exit status {child.returncode})")
                             for v in ("dyn", "fixed")]
        elif todo and not done:
            break
    return results


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--merge":  # export.jsonl of a stopped run.
        out = sys.argv[2]
        index = os.path.join(out, "exports.json")
        entries = json.load(open(index)) if os.path.exists(index) else []
        for line in open(os.path.join(out, "export.jsonl")):
            new = json.loads(line)
            files = {e["file"] for e in new}
            entries = [e for e in entries if e["file"] not in files] + new
        with open(index, "w") as f:
            json.dump(sorted(entries, key=lambda e: e["file"]), f, indent=1)
            f.write("\n")
        return
    if len(sys.argv) >= 3 and sys.argv[1] == "--recount":  # The counts, without exporting.
        recount(sys.argv[2], sys.argv[3:])
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        table(sys.argv[2])
        return
    if len(sys.argv) >= 3 and sys.argv[1] == "--one":
        for name in sys.argv[3:]:
            try:
                entries = export_one(sys.argv[2], name)
            except Exception as e:  # noqa: BLE001 - recorded, and the run goes on
                entries = [dict(file=f"{name}.{v}.onnx", model=name,
                                status=f"export failed: {type(e).__name__}: {str(e)[:300]}")
                           for v in ("dyn", "fixed")]
            print(json.dumps(entries), flush=True)
        return
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    names = sys.argv[2:] or classification_builders() + [ENCODER, DECODER]
    jobs = int(os.environ.get("EXPORT_JOBS", "1"))
    index = os.path.join(out, "exports.json")
    entries = json.load(open(index)) if os.path.exists(index) else []
    with open(os.path.join(out, "export.log"), "a") as log:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(jobs) as pool:
            parts = pool.map(lambda part: run_children(out, part, log),
                             [names[i::jobs] for i in range(jobs)])
            results = {k: v for part in parts for k, v in part.items()}
    new = [e for name in names for e in results.get(name, [])]
    files = {e["file"] for e in new}
    entries = [e for e in entries if e["file"] not in files] + new
    with open(index, "w") as f:
        json.dump(sorted(entries, key=lambda e: e["file"]), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
