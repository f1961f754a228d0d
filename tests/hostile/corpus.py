"""The bad-input corpus of issue 21 §4: every input kind the CLI reads, every class of defect.

Usage:
  corpus.py write               regenerate tests/hostile/corpus/ (the committed files)
  corpus.py check               the committed files are what this script writes (ctest)
  corpus.py run --cli CAPCALC [--kind K] [--no-memory-limit]
                                run every case (of kind K) through the CLI (ctest: one per kind)
  corpus.py stats               cases and files by kind and by class

Each case is one input (a file written here, a file made at run time, or only flags) and a
command line. Run through the CLI with a 10 s timeout and a 4 GiB address-space limit, every
case must: exit with code 2, print nothing on stdout, print one line on stderr that starts
`capcalc: error: ` followed by the location (FILE:LINE:COL, FILE:/json/pointer, FILE for I/O,
--flag for usage), and match the case's pattern (what went wrong). Cases are data below; the
files are written from them so that the corpus and its expectations cannot drift apart.
"""
import argparse
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")
REL = "tests/hostile/corpus"
# From a file in tests/hostile/corpus/<kind>/ to the repository root (budget model paths).
UP = "../../../../"

KINDS = ["model", "onnx", "onnxtxt", "textproto", "hf", "hardware", "runtime", "budget",
         "measurements", "trace", "mix", "serving", "zoo", "flags"]
CLASSES = ["depth", "expansion", "size", "not-a-file", "overflow", "duplicate", "type",
           "invalid-graph", "physics", "syntax", "reference"]
EXT = {"model": "json", "onnx": "onnx", "onnxtxt": "onnxtxt", "textproto": "textproto",
       "hf": "json", "hardware": "json", "runtime": "json", "budget": "json",
       "measurements": "json", "trace": "jsonl", "mix": "json", "serving": "json"}

TIMEOUT_S = 10
MEMORY_LIMIT_BYTES = 4 << 30


class Case:
    """One hostile input. `content` is bytes/str for a committed file, a callable (dir, path)
    for a file made at run time, or None (flags only). `args` use {f} for the input's path and
    {made} for the run's temporary folder. `where` is the location kind: "line" (FILE:L:C:),
    "pointer" (FILE:/...: ), "file" (FILE: ), "flag" (a --flag or value), or a literal
    prefix regex."""

    def __init__(self, kind, cls, name, content, args, pattern, where):
        assert kind in KINDS and cls in CLASSES, (kind, cls)
        self.known_open = KNOWN_OPEN.get((kind, name))
        self.kind, self.cls, self.name = kind, cls, name
        self.content, self.args, self.pattern, self.where = content, args, pattern, where

    @property
    def committed(self):
        return isinstance(self.content, (bytes, str))

    def rel_path(self):
        return f"{REL}/{self.kind}/{self.name}.{EXT.get(self.kind, 'txt')}"


CASES = []

# Cases written in a loop of "type" cases whose defect is of another class: a name of
# something elsewhere, or one entry repeating another's id.
RECLASS = {
    **{("budget", n): "reference" for n in ["device_unknown", "model_zoo_unknown", "model_bad_file",
                                            "set_unknown_dim", "runtime_unknown"]},
    **{("measurements", n): "reference" for n in ["device_unknown", "model_missing_file",
                                                  "dims_unknown"]},
    **{("model", n): "reference" for n in ["block_unknown", "block_arg_unknown", "block_arg_missing",
                                           "input_unknown", "attr_unknown_name", "op_unknown"]},
    ("hardware", "alias_builtin_a100"): "reference", ("runtime", "alias_of_builtin"): "reference",
    ("runtime", "kernels_unknown_class"): "reference",
    ("hardware", "same_id_twice"): "duplicate", ("hardware", "alias_twice"): "duplicate",
    ("measurements", "same_id_twice"): "duplicate",
}


# Found by this corpus and not fixed yet: run, reported as open, and a failure once they pass
# (then the entry goes). ONNX's shape inference, run leniently, gives up on these nodes without
# a word, and a graph output's declared shape then stands in for the node's (onnx.cpp).
KNOWN_OPEN = {
}


def case(kind, cls, name, content, args, pattern, where):
    CASES.append(Case(kind, RECLASS.get((kind, name), cls), name, content, args, pattern, where))


# --- Builders --------------------------------------------------------------------------------

def model(layers, extra="", dims='{"batch": 1}', inputs='[{"name": "x", "shape": ["batch", 16]}]'):
    return ('{"format": "capcalc-model/1", "name": "m", ' + extra + '"dims": ' + dims +
            ', "inputs": ' + inputs + ',\n "layers": ' + layers + '}\n')


LINEAR = '{"name": "fc", "op": "linear", "out_features": 8}'


def linear(out, name="fc", more=""):
    return '{"name": "' + name + '", "op": "linear", "out_features": ' + out + more + '}'


def hardware(device, top=""):
    return ('{"schema_version": 1, ' + top + '"devices": [\n  {' + device + '}]}\n')


def device(**over):
    fields = {"id": '"my-gpu"', "name": '"My GPU"', "type": '"gpu"', "vendor": '"me"',
              "dense_peak_tflops": '{"fp16": {"matrix": 100}, "fp32": {"vector": 10}}',
              "memory_gb": "80", "memory_bandwidth_gb_per_s": "2000",
              "sources": '["https://example.invalid/datasheet"]'}
    for key, value in over.items():
        key = key.replace("__", "/")
        if value is None:
            fields.pop(key, None)
        else:
            fields[key] = value
    return ", ".join(f'"{k}": {v}' for k, v in fields.items())


def runtime(body, top=""):
    return '{"schema_version": 1, ' + top + '"runtimes": [\n  {' + body + '}]}\n'


RUNTIME = ('"id": "my-rt", "name": "My runtime", "profile": "eager", "device_types": ["gpu"], '
           '"sources": ["https://example.invalid/rt"]')


def budget(entry, top=""):
    return '{"schema_version": 1, ' + top + '"budgets": [\n  {' + entry + '}]}\n'


BUDGET = ('"model": "' + UP + 'data/models/resnet50.json", "devices": ["a100"], '
          '"limits": {"max_latency": "1s"}')


def measurements(entry, top=""):
    return '{"schema_version": 1, ' + top + '"cases": [\n  {' + entry + '}]}\n'


def measurement(**over):
    fields = {"id": '"a"', "model": '"resnet50.json"', "dims": '{"batch": 64}', "device": '"A100"',
              "precision": '"fp16"', "mode": '"inference"', "metric": '"throughput_per_s"',
              "value": "2000", "source": '"https://example.invalid/lab"', "quote": '"q"'}
    for key, value in over.items():
        if value is None:
            fields.pop(key, None)
        else:
            fields[key] = value
    return ", ".join(f'"{k}": {v}' for k, v in fields.items())


def hf(**over):
    fields = {"model_type": '"llama"', "hidden_size": "256", "intermediate_size": "512",
              "num_attention_heads": "4", "num_hidden_layers": "2", "vocab_size": "1000",
              "max_position_embeddings": "2048"}
    for key, value in over.items():
        if value is None:
            fields.pop(key, None)
        else:
            fields[key] = value
    return "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}\n"


def onnxtxt(signature, body, inits=""):
    return ('<ir_version: 8, opset_import: ["" : 17]>\n' + signature + "\n" +
            (inits + "\n" if inits else "") + "{\n" + body + "\n}\n")


def textproto(graph, header='ir_version: 8\nopset_import { domain: "" version: 17 }\n'):
    return header + "graph {\n" + graph + "}\n"


def tp_input(name, dims, elem=1):
    shape = " ".join(f"dim {{ dim_value: {d} }}" for d in dims)
    return (f'  input {{ name: "{name}" type {{ tensor_type {{ elem_type: {elem} '
            f'shape {{ {shape} }} }} }} }}\n')


def tp_output(name):
    return f'  output {{ name: "{name}" type {{ tensor_type {{ elem_type: 1 }} }} }}\n'


# Protobuf's wire format, enough to write ONNX models by hand (onnx.proto3 field numbers).
def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, value):
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    if isinstance(value, str):
        value = value.encode()
    return varint(number << 3 | 2) + varint(len(value)) + value


def pb_dims(dims):
    shape = b"".join(field(1, field(1, d) if isinstance(d, int) else field(2, d)) for d in dims)
    return shape


def pb_value(name, dims, elem=1):
    tensor = field(1, elem) + field(2, pb_dims(dims))
    return field(1, name) + field(2, field(1, tensor))


def pb_attr_ints(name, ints):
    return field(1, name) + b"".join(field(8, i) for i in ints) + field(20, 7)


def pb_attr_int(name, i):
    return field(1, name) + field(3, i) + field(20, 2)


def pb_node(op, inputs, outputs, name="", attrs=()):
    return (b"".join(field(1, i) for i in inputs) + b"".join(field(2, o) for o in outputs) +
            field(3, name or op + "_0") + field(4, op) + b"".join(field(5, a) for a in attrs))


def pb_tensor(name, dims, elem=1, raw=None, int64s=None):
    body = b"".join(field(1, d) for d in dims) + field(2, elem) + field(8, name)
    if raw is not None:
        body += field(9, raw)
    for v in int64s or []:
        body += field(7, v)
    return body


def pb_model(nodes, inputs, outputs, inits=(), ir=8, opset=17):
    graph = (b"".join(field(1, n) for n in nodes) + field(2, "g") +
             b"".join(field(5, t) for t in inits) +
             b"".join(field(11, v) for v in inputs) + b"".join(field(12, v) for v in outputs))
    return field(1, ir) + field(8, field(1, "") + field(2, opset)) + field(7, graph)


def pb_if_nested(depth):
    """An If whose then_branch holds an If ... `depth` deep; the innermost branch is a Relu."""
    def graph(level):
        if level == depth:
            return field(1, pb_node("Relu", ["x"], ["t"])) + field(2, f"g{level}") + field(12, pb_value("t", [4]))
        sub = graph(level + 1)
        attr_then = field(1, "then_branch") + field(6, sub) + field(20, 5)
        leaf = field(1, pb_node("Relu", ["x"], ["t"])) + field(2, f"e{level}") + field(12, pb_value("t", [4]))
        attr_else = field(1, "else_branch") + field(6, leaf) + field(20, 5)
        node = pb_node("If", ["c"], ["t"], name=f"If_{level}", attrs=[attr_then, attr_else])
        return field(1, node) + field(2, f"g{level}") + field(12, pb_value("t", [4]))
    top = graph(1)
    return (field(1, 8) + field(8, field(1, "") + field(2, 17)) +
            field(7, top + field(11, pb_value("c", [], elem=9)) + field(11, pb_value("x", [4]))))


def pb_value_untyped(name, elem=1):
    """A graph output of a known element type and no shape: capcalc infers it."""
    return field(1, name) + field(2, field(1, field(1, elem)))


ONNX_OK_IN = pb_value("x", [4, 16])
ONNX_OUT = pb_value_untyped("y")
ONNX_OUT_DECLARED = pb_value("y", [4, 8])


# --- Native model JSON -----------------------------------------------------------------------

M = "model"
LINE = "line"
PTR = "pointer"
FILE = "file"
FLAG = "flag"


def model_cases():
    layers = lambda *ls: "[" + ", ".join(ls) + "]"  # noqa: E731
    # Depth: brackets past 256, wherever they sit; an expression past 128; blocks past 32.
    for name, where in [("deep_shape", "shape"), ("deep_comment", "comment"), ("deep_args", "args"),
                        ("deep_dims", "dims")]:
        deep = "[" * 300 + "]" * 300
        if where == "shape":
            text = model(layers(LINEAR), inputs='[{"name": "x", "shape": ' + deep + "}]")
        elif where == "comment":
            text = model(layers(LINEAR), extra='"comment": ' + "{\"a\": " * 300 + "1" + "}" * 300 + ", ")
        elif where == "args":
            text = model(layers('{"name": "b", "block": "x", "args": {"n": ' + deep + "}}"))
        else:
            text = model(layers(LINEAR), dims='{"batch": ' + deep + "}")
        case(M, "depth", name, text, ["layers", "{f}"], r"nest more than 256 deep \(the limit\)", LINE)
    case(M, "depth", "deep_256_ok_then_type", model(layers(LINEAR), inputs='[{"name": "x", "shape": [' + "[" * 250 + "]" * 250 + "]}]"),
         ["layers", "{f}"], r"/inputs/0/shape/0: ", PTR)
    for key, expr in [("out_features", "(" * 70 + "8" + ")" * 70), ("repeat", "-" * 200 + "1"),
                      ("args", "(" * 100 + "1" + ")" * 100)]:
        if key == "args":
            text = model(layers('{"name": "b", "block": "k", "args": {"n": "' + expr + '"}}'),
                         extra='"blocks": {"k": {"args": {"n": null}, "layers": [' + linear('"n"') + "]}}, ")
        elif key == "repeat":
            text = model(layers(linear("8", more=', "repeat": "' + expr + '"')))
        else:
            text = model(layers(linear('"' + expr + '"')))
        case(M, "depth", f"expression_deep_{key}", text, ["layers", "{f}"], r"nested too deeply", PTR)
    blocks = '"blocks": {"a": {"layers": [{"name": "x", "block": "a"}]}}, '
    case(M, "depth", "block_self_recursive", model(layers('{"name": "b", "block": "a"}'), extra=blocks),
         ["layers", "{f}"], r"block", PTR)
    blocks = ('"blocks": {"a": {"layers": [{"name": "x", "block": "b"}]}, '
              '"b": {"layers": [{"name": "y", "block": "a"}]}}, ')
    case(M, "depth", "block_mutual_recursion", model(layers('{"name": "b", "block": "a"}'), extra=blocks),
         ["layers", "{f}"], r"block", PTR)
    chain = ", ".join(f'"b{i}": {{"layers": [{{"name": "x", "block": "b{i + 1}"}}]}}' for i in range(40))
    chain += ', "b40": {"layers": [' + LINEAR + "]}"
    case(M, "depth", "block_chain_40", model(layers('{"name": "b", "block": "b0"}'), extra='"blocks": {' + chain + "}, "),
         ["layers", "{f}"], r"32", PTR)
    args = ", ".join([f'"a{i}": "a{i + 1} + 1"' for i in range(40)] + ['"a40": 1'])
    case(M, "depth", "default_chain_40",
         model(layers('{"name": "b", "block": "k"}'),
               extra='"blocks": {"k": {"args": {' + args + '}, "layers": [' + linear('"a0"') + "]}}, "),
         ["layers", "{f}"], r"32|deep|chain", PTR)
    case(M, "depth", "default_cycle",
         model(layers('{"name": "b", "block": "k"}'),
               extra='"blocks": {"k": {"args": {"a": "b + 1", "b": "a + 1"}, "layers": [' + linear('"a"') + "]}}, "),
         ["layers", "{f}"], r"", PTR)

    # Expansion past 250,000 layers.
    for name, lay, extra in [
            ("repeat_1e7", layers(linear("8", more=', "repeat": 10000000')), ""),
            ("repeat_expr_pow", layers(linear("8", more=', "repeat": "1000000 * 1000000"')), ""),
            ("repeat_dim", layers(linear("8", more=', "repeat": "n"')), ""),
            ("block_repeat_product", layers('{"name": "b", "block": "k", "repeat": 1000}'),
             '"blocks": {"k": {"layers": [' + linear("8", more=', "repeat": 2000') + "]}}, "),
            ("many_blocks_fanout", layers('{"name": "b", "block": "k0"}'),
             '"blocks": {' + ", ".join(f'"k{i}": {{"layers": [{{"name": "p", "block": "k{i + 1}"}}, {{"name": "q", "block": "k{i + 1}"}}]}}' for i in range(25)) +
             ', "k25": {"layers": [' + LINEAR + "]}}, ")]:
        dims = '{"batch": 1, "n": 123456789012}' if name == "repeat_dim" else '{"batch": 1}'
        case(M, "expansion", name, model(lay, extra=extra, dims=dims), ["layers", "{f}"],
             r"expands to more than 250,000 layers \(the limit\)", PTR)
    # Overflow: counts past 64 bits are errors naming the layer or key.
    for name, lay, dims in [
            ("linear_overflow", layers(linear("4611686018427387904")), None),
            ("dim_overflow", layers(LINEAR), '{"batch": 4611686018427387904}'),
            ("expr_add_overflow", layers(linear('"9223372036854775807 + 1"')), None),
            ("expr_mul_overflow", layers(linear('"4294967296 * 4294967296"')), None),
            ("expr_div_zero", layers(linear('"8 / 0"')), None),
            ("expr_mod_zero", layers(linear('"8 % 0"')), None),
            ("conv_overflow", layers('{"name": "c", "op": "conv2d", "out_channels": 2147483648, "kernel": 65536}'),
             None),
            ("first_index_neg_overflow", layers(linear("8", more=', "repeat": 3, "first_index": -9223372036854775807')), None),
            ("integer_too_big", layers(linear("99999999999999999999")), None),
            ("number_overflow_1e400", layers(linear("1e400")), None)]:
        text = model(lay, dims=dims) if dims else model(lay)
        if name == "conv_overflow":
            text = model(lay, dims='{"batch": 1048576}',
                         inputs='[{"name": "x", "shape": ["batch", 3, 65536, 65536]}]')
        w = LINE if name == "number_overflow_1e400" else PTR
        case(M, "overflow", name, text, ["estimate", "{f}", "--gpu", "a100"], r"", w)
    # Duplicate keys everywhere.
    for name, text in [
            ("dup_format", '{"format": "capcalc-model/1", "format": "capcalc-model/1", "name": "m", "layers": [' + LINEAR + "]}\n"),
            ("dup_input_key", model(layers(LINEAR), inputs='[{"name": "x", "name": "y", "shape": [1, 16]}]')),
            ("dup_block_key", model(layers('{"name": "b", "block": "k"}'),
                                    extra='"blocks": {"k": {"layers": []}, "k": {"layers": []}}, ')),
            ("dup_block_arg", model(layers('{"name": "b", "block": "k", "args": {"n": 1, "n": 2}}'),
                                    extra='"blocks": {"k": {"args": {"n": null}, "layers": [' + linear('"n"') + "]}}, ")),
            ("dup_op", model(layers('{"name": "fc", "op": "linear", "op": "relu", "out_features": 8}'))),
            ("dup_name_nested", model(layers(linear("8", more=', "comment": "a", "comment": "b"'))))]:
        case(M, "duplicate", name, text, ["layers", "{f}"], r"duplicate key", LINE)
    # Types: every key has the schema's type.
    for name, text, ptr in [
            ("layers_object", model('{"fc": ' + LINEAR + "}"), "/layers"),
            ("layers_null", model("null"), "/layers"),
            ("layers_empty", model("[]"), "/layers"),
            ("name_number", '{"format": "capcalc-model/1", "name": 5, "layers": [' + LINEAR + "]}\n", "/name"),
            ("op_number", model(layers('{"name": "fc", "op": 7}')), "/layers/0/op"),
            ("op_unknown", model(layers('{"name": "fc", "op": "lineer", "out_features": 8}')), "/layers/0/op"),
            ("attr_unknown", model(layers(linear("8", more=', "out_featurs": 8'))), "/layers/0"),
            ("attr_float", model(layers(linear("8.5"))), "/layers/0/out_features"),
            ("attr_zero", model(layers(linear("0"))), "/layers/0/out_features"),
            ("attr_negative", model(layers(linear("-8"))), "/layers/0/out_features"),
            ("attr_bool", model(layers(linear("true"))), "/layers/0/out_features"),
            ("attr_bad_expr", model(layers(linear('"8 +* 2"'))), "/layers/0/out_features"),
            ("attr_unknown_name", model(layers(linear('"hiden"'))), "/layers/0/out_features"),
            ("shape_string", model(layers(LINEAR), inputs='[{"name": "x", "shape": "batch"}]'), "/inputs/0/shape"),
            ("shape_empty_dim", model(layers(LINEAR), inputs='[{"name": "x", "shape": ["batch", 0]}]'), "/inputs/0/shape/1"),
            ("dims_array", model(layers(LINEAR), dims="[1]"), "/dims"),
            ("format_wrong", '{"format": "capcalc-model/9", "name": "m", "layers": [' + LINEAR + "]}\n", "/format"),
            ("top_unknown_key", model(layers(LINEAR), extra='"layer": [], '), "/"),
            ("repeat_zero", model(layers(linear("8", more=', "repeat": 0'))), "/layers/0/repeat"),
            ("repeat_float", model(layers(linear("8", more=', "repeat": 1.5'))), "/layers/0/repeat"),
            ("layer_name_empty", model(layers(linear("8", name=""))), "/layers/0/name"),
            ("input_unknown", model(layers(linear("8", more=', "inputs": ["nothere"]'))), "/layers/0/inputs/0"),
            ("block_unknown", model(layers('{"name": "b", "block": "nope"}')), "/layers/0/block"),
            ("block_arg_unknown", model(layers('{"name": "b", "block": "k", "args": {"m": 1}}'),
                                        extra='"blocks": {"k": {"args": {"n": 1}, "layers": [' + linear('"n"') + "]}}, "), "/layers/0/args"),
            ("block_arg_missing", model(layers('{"name": "b", "block": "k"}'),
                                        extra='"blocks": {"k": {"args": {"n": null}, "layers": [' + linear('"n"') + "]}}, "), "/layers/0"),
            ("layer_string", model('["fc"]'), "/layers/0"),
            ("root_array", "[1, 2, 3]\n", "/"),
            ("root_string", '"capcalc-model/1"\n', "/"),
            ("source_number", model(layers(LINEAR), extra='"source": 12, '), "/source"),
            # A default no call uses was never read: an object or a boolean passed.
            ("block_default_object", model(layers('{"name": "b", "block": "k", "args": {"n": 4}}'),
                                           extra='"blocks": {"k": {"args": {"n": {"min": 1}}, "layers": [' + linear('"n"') + "]}}, "),
             "/blocks/k/args/n"),
            ("block_default_bool", model(layers('{"name": "b", "block": "k"}'),
                                         extra='"blocks": {"k": {"args": {"n": 4, "flag": true}, "layers": [' + linear('"n"') + "]}}, "),
             "/blocks/k/args/flag"),
            ("block_default_float", model(layers('{"name": "b", "block": "k"}'),
                                          extra='"blocks": {"k": {"args": {"n": 4.5}, "layers": [' + linear('"n"') + "]}}, "),
             "/blocks/k/args/n")]:
        case(M, "type", name, text, ["layers", "{f}"], re.escape(ptr) + r"\b", PTR)
    # Syntax, with line and column.
    for name, text in [
            ("truncated", model(layers(LINEAR))[:-20]), ("trailing_comma", '{"name": "m", "layers": [1,],}\n'),
            ("trailing_garbage", model(layers(LINEAR)) + "}\n"), ("empty", ""), ("whitespace", "  \n\t\n"),
            ("single_quotes", "{'name': 'm'}\n"), ("comment_slashes", '// a model\n{"name": "m"}\n'),
            ("control_char", '{"name": "a\x01b", "layers": []}\n'), ("bad_utf8", b'{"name": "\xff\xfe", "layers": []}\n'),
            ("nan_literal", model(layers(linear("NaN")))), ("unclosed_string", '{"name": "m\n'),
            ("bom", "\ufeff" + model(layers(LINEAR)))]:
        if name == "bom":
            # A byte-order mark: nlohmann skips it; the model then loads. Not a hostile case.
            continue
        case(M, "syntax", name, text, ["layers", "{f}"], r"", LINE)
    case(M, "syntax", "nul_byte", b'{"name": "m",\n "layers": [\x00]}\n', ["layers", "{f}"], r"NUL byte", LINE)
    # Sizes and files that are not files (made at run time).
    case(M, "size", "big_spaces", lambda d, p: write_big(p, 65 << 20, b" "), ["layers", "{f}"],
         r"larger than 64 MiB, the limit for JSON files", FILE)
    case(M, "not-a-file", "fifo", make_fifo, ["layers", "{f}"], r"not a regular file \(a FIFO\)", FILE)
    case(M, "not-a-file", "symlink_fifo", make_symlink_fifo, ["layers", "{f}"], r"not a regular file \(a FIFO\)", FILE)
    case(M, "not-a-file", "dangling_symlink", lambda d, p: os.symlink(os.path.join(d, "nowhere"), p),
         ["layers", "{f}"], r"cannot open file", FILE)
    case(M, "not-a-file", "directory", lambda d, p: os.mkdir(p), ["layers", "{f}"], r"not a regular file \(a directory\)", FILE)
    case(M, "not-a-file", "dev_null", None, ["layers", "/dev/null"], r"^capcalc: error: /dev/null: not a regular file", "/dev/null")
    case(M, "not-a-file", "dev_urandom", None, ["estimate", "/dev/urandom", "--gpu", "a100"],
         r"^capcalc: error: /dev/urandom: not a regular file", "/dev/urandom")
    case(M, "not-a-file", "missing", None, ["layers", "tests/hostile/corpus/model/no_such_file.json"],
         r"no_such_file.json: cannot open file", "tests/hostile/corpus/model/no_such_file.json")


def write_big(path, size, byte):
    with open(path, "wb") as f:
        chunk = byte * (1 << 20)
        for _ in range(size >> 20):
            f.write(chunk)


def make_fifo(directory, path):
    os.mkfifo(path)


def make_symlink_fifo(directory, path):
    target = path + ".target"
    os.mkfifo(target)
    os.symlink(target, path)


# --- ONNX, binary ----------------------------------------------------------------------------

def onnx_cases():
    O = "onnx"
    gemm_w = pb_tensor("w", [15, 8], raw=bytes(15 * 8 * 4))
    graphs = [
        ("gemm_k", [pb_node("Gemm", ["x", "w"], ["y"])], [ONNX_OK_IN], [ONNX_OUT], [gemm_w], r"K = 16 but B takes K = 15"),
        ("matmul_k", [pb_node("MatMul", ["x", "w"], ["y"])], [ONNX_OK_IN], [ONNX_OUT], [gemm_w], r"16 and 15 differ"),
        ("conv_channels", [pb_node("Conv", ["img", "w"], ["y"])], [pb_value("img", [1, 3, 8, 8])], [ONNX_OUT],
         [pb_tensor("w", [4, 5, 3, 3], raw=bytes(4 * 5 * 9 * 4))], r"channels"),
        # Channels and groups the GEMM view divides by (CI's fuzzer found the first, a division
        # by zero in the count).
        ("conv_no_out_channels", [pb_node("Conv", ["img", "w"], ["y"])], [pb_value("img", [1, 3, 8, 8])], [ONNX_OUT],
         [pb_tensor("w", [0, 3, 3, 3], raw=b"")], r"the weight \[0, 3, 3, 3\] has no output channels"),
        ("conv_no_in_channels", [pb_node("Conv", ["img", "w"], ["y"])], [pb_value("img", [1, 0, 8, 8])], [ONNX_OUT],
         [pb_tensor("w", [4, 0, 3, 3], raw=b"")], r"axis 1 has no size"),
        ("conv_group_zero", [pb_node("Conv", ["img", "w"], ["y"], attrs=[pb_attr_int("group", 0)])],
         [pb_value("img", [1, 3, 8, 8])], [ONNX_OUT],
         [pb_tensor("w", [4, 3, 3, 3], raw=bytes(4 * 3 * 9 * 4))], r"group must be a positive integer"),
        ("conv_transpose_no_channels", [pb_node("ConvTranspose", ["img", "w"], ["y"])], [pb_value("img", [1, 3, 8, 8])],
         [ONNX_OUT], [pb_tensor("w", [3, 0, 3, 3], raw=b"")], r"the weight \[3, 0, 3, 3\] has no output channels"),
        ("reshape_count", [pb_node("Reshape", ["x", "s"], ["y"])], [ONNX_OK_IN], [ONNX_OUT],
         [pb_tensor("s", [3], elem=7, int64s=[7, 7, 7])], r"64 elements\) to \[7, 7, 7\]"),
        ("reshape_two_minus_one", [pb_node("Reshape", ["x", "s"], ["y"])], [ONNX_OK_IN], [ONNX_OUT],
         [pb_tensor("s", [3], elem=7, int64s=[-1, 4, -1])], r"more than one -1"),
        ("reshape_minus_one_not_inferable", [pb_node("Reshape", ["x", "s"], ["y"])], [ONNX_OK_IN], [ONNX_OUT],
         [pb_tensor("s", [2], elem=7, int64s=[-1, 7])], r"-1"),
        ("reshape_zero_past_rank", [pb_node("Reshape", ["x", "s"], ["y"])], [ONNX_OK_IN], [ONNX_OUT],
         [pb_tensor("s", [4], elem=7, int64s=[0, 0, 0, 1])], r""),
        ("reshape_negative", [pb_node("Reshape", ["x", "s"], ["y"])], [ONNX_OK_IN], [ONNX_OUT],
         [pb_tensor("s", [2], elem=7, int64s=[-2, 32])], r""),
        ("add_broadcast", [pb_node("Add", ["x", "z"], ["y"])], [ONNX_OK_IN, pb_value("z", [4, 15])], [ONNX_OUT], [], r"do not broadcast"),
        ("concat_mismatch", [pb_node("Concat", ["x", "z"], ["y"], attrs=[pb_attr_int("axis", 1)])],
         [ONNX_OK_IN, pb_value("z", [5, 16])], [ONNX_OUT], [], r"does not match input 0"),
        ("transpose_perm_length", [pb_node("Transpose", ["x"], ["y"], attrs=[pb_attr_ints("perm", [0, 1, 2])])],
         [ONNX_OK_IN], [ONNX_OUT], [], r"not a permutation"),
        ("transpose_perm_repeat", [pb_node("Transpose", ["x"], ["y"], attrs=[pb_attr_ints("perm", [0, 0])])],
         [ONNX_OK_IN], [ONNX_OUT], [], r"perm"),
        ("softmax_axis", [pb_node("Softmax", ["x"], ["y"], attrs=[pb_attr_int("axis", 5)])], [ONNX_OK_IN], [ONNX_OUT], [], r"axis 5 is out of range"),
        ("flatten_axis", [pb_node("Flatten", ["x"], ["y"], attrs=[pb_attr_int("axis", 9)])], [ONNX_OK_IN], [ONNX_OUT], [], r""),
        ("undefined_input", [pb_node("Relu", ["nothere"], ["y"])], [ONNX_OK_IN], [ONNX_OUT], [], r"nothere"),
        ("cycle", [pb_node("Relu", ["b"], ["a"], name="r0"), pb_node("Relu", ["a"], ["b"], name="r1")],
         [ONNX_OK_IN], [pb_value("b", [4, 16])], [], r""),
        ("written_twice", [pb_node("Relu", ["x"], ["y"], name="r0"), pb_node("Sigmoid", ["x"], ["y"], name="r1")],
         [ONNX_OK_IN], [ONNX_OUT], [], r"already written"),
        ("empty_op", [pb_node("", ["x"], ["y"], name="n")], [ONNX_OK_IN], [ONNX_OUT], [], r"no op_type"),
        ("input_twice", [pb_node("Relu", ["x"], ["y"])], [ONNX_OK_IN, ONNX_OK_IN], [ONNX_OUT], [], r"declared twice"),
        ("init_type0", [pb_node("MatMul", ["x", "w"], ["y"])], [ONNX_OK_IN], [ONNX_OUT],
         [pb_tensor("w", [16, 8], elem=0)], r"data_type 0"),
        ("init_raw_size", [pb_node("MatMul", ["x", "w"], ["y"])], [ONNX_OK_IN], [ONNX_OUT],
         [pb_tensor("w", [16, 8], raw=bytes(7))], r""),
        ("init_negative_dim", [pb_node("MatMul", ["x", "w"], ["y"])], [ONNX_OK_IN], [ONNX_OUT],
         [pb_tensor("w", [-16, 8])], r""),
        ("init_huge_dims", [pb_node("MatMul", ["x", "w"], ["y"])], [ONNX_OK_IN], [ONNX_OUT],
         [pb_tensor("w", [1 << 40, 1 << 40])], r""),
        ("input_negative_dim", [pb_node("Relu", ["x"], ["y"])], [pb_value("x", [-4, 16])], [ONNX_OUT], [], r""),
        ("input_huge_dims", [pb_node("Relu", ["x"], ["y"])], [pb_value("x", [1 << 31, 1 << 31, 1 << 31])], [ONNX_OUT], [],
         r"64-bit"),
        ("input_40_dims", [pb_node("Relu", ["x"], ["y"])], [pb_value("x", [1] * 40)], [ONNX_OUT], [], r"40 dims, more than 32"),
        ("input_elem_99", [pb_node("Relu", ["x"], ["y"])], [pb_value("x", [4, 16], elem=99)], [ONNX_OUT], [], r"element type 99"),
        ("attr_wrong_type", [pb_node("Softmax", ["x"], ["y"], attrs=[field(1, "axis") + field(2, b"\x00\x00\x80\x3f") + field(20, 1)])],
         [ONNX_OK_IN], [ONNX_OUT], [], r"axis"),
        ("matmul_overflow", [pb_node("MatMul", ["x", "w"], ["y"])], [pb_value("x", [1 << 30, 1 << 30])], [ONNX_OUT],
         [pb_tensor("w", [1 << 30, 1 << 30])], r""),
    ]
    graphs += [
        ("declared_conflict", [pb_node("Conv", ["img", "w"], ["y"])], [pb_value("img", [1, 3, 8, 8])], [ONNX_OUT_DECLARED],
         [pb_tensor("w", [4, 3, 3, 3], raw=bytes(4 * 3 * 9 * 4))], r"ONNX shape inference: Inferred shape and existing shape differ"),
        ("declared_softmax_axis", [pb_node("Softmax", ["x"], ["y"], attrs=[pb_attr_int("axis", 5)])], [ONNX_OK_IN], [ONNX_OUT_DECLARED], [], r"axis"),
        ("declared_transpose_perm", [pb_node("Transpose", ["x"], ["y"], attrs=[pb_attr_ints("perm", [0, 1, 2])])],
         [ONNX_OK_IN], [ONNX_OUT_DECLARED], [], r"perm"),
        ("declared_add_broadcast", [pb_node("Add", ["x", "z"], ["y"])], [ONNX_OK_IN, pb_value("z", [4, 15])], [ONNX_OUT_DECLARED], [], r"broadcast"),
        ("declared_concat_mismatch", [pb_node("Concat", ["x", "z"], ["y"], attrs=[pb_attr_int("axis", 1)])],
         [ONNX_OK_IN, pb_value("z", [5, 16])], [ONNX_OUT_DECLARED], [], r"does not match input 0"),
        # Held to ONNX's own rule for the node alone (src/import/onnx_declared.cpp).
        ("declared_flatten_axis", [pb_node("Flatten", ["x"], ["y"], attrs=[pb_attr_int("axis", 9)])],
         [ONNX_OK_IN], [ONNX_OUT_DECLARED], [], r"Invalid value\(9\) for attribute 'axis'"),
        ("declared_gather_axis", [pb_node("Gather", ["x", "i"], ["y"], attrs=[pb_attr_int("axis", 5)])],
         [ONNX_OK_IN], [ONNX_OUT_DECLARED], [pb_tensor("i", [2], elem=7, int64s=[0, 1])], r"axis must be in"),
        ("declared_reduce_axes", [pb_node("ReduceMean", ["x"], ["y"], attrs=[pb_attr_ints("axes", [7])])],
         [ONNX_OK_IN], [ONNX_OUT_DECLARED], [], r"axis must be in"),
        ("declared_split_sum", [pb_node("Split", ["x", "s"], ["y", "z"], attrs=[pb_attr_int("axis", 1)])],
         [ONNX_OK_IN], [ONNX_OUT_DECLARED, pb_value("z", [4, 8])], [pb_tensor("s", [2], elem=7, int64s=[3, 3])],
         r"sum of 'split' \(6\)"),
        ("declared_squeeze_not_one", [pb_node("Squeeze", ["x", "a"], ["y"])],
         [ONNX_OK_IN], [ONNX_OUT_DECLARED], [pb_tensor("a", [1], elem=7, int64s=[0])], r"must be 1 instead of 4"),
        ("declared_unsqueeze_axes", [pb_node("Unsqueeze", ["x", "a"], ["y"])],
         [ONNX_OK_IN], [ONNX_OUT_DECLARED], [pb_tensor("a", [1], elem=7, int64s=[9])], r"beyond the bounds"),
        ("declared_relu_dims", [pb_node("Relu", ["x"], ["y"])], [ONNX_OK_IN], [ONNX_OUT_DECLARED], [],
         r"\[4, 8\]|differ"),
    ]
    for name, nodes, inputs, outputs, inits, pattern in graphs:
        cls = "overflow" if "huge" in name or "overflow" in name else "invalid-graph"
        where = r"/graph/(node|input|initializer)/\d+"
        case(O, cls, name, pb_model(nodes, inputs, outputs, inits), ["layers", "{f}"], pattern, ("ptrre", where))
    # No ONNX schema at the file's opset (LayerNormalization came in opset 17): held to the
    # row's own shape rule instead (src/import/onnx_shapes.cpp, check_declared_shape).
    case(O, "invalid-graph", "declared_layernorm_opset13",
         pb_model([pb_node("LayerNormalization", ["x", "s"], ["y"], attrs=[pb_attr_int("axis", -1)])], [ONNX_OK_IN],
                  [ONNX_OUT_DECLARED], [pb_tensor("s", [16], raw=bytes(16 * 4))], opset=13),
         ["layers", "{f}"], r"the file declares \[4, 8\] for \"y\", but the operator gives \[4, 16\]",
         ("ptrre", "/graph/node/0"))
    case(O, "invalid-graph", "strict_unknown", pb_model([pb_node("Relu", ["x"], ["h"]), pb_node("Frob", ["h"], ["y"], name="f")],
                                                        [ONNX_OK_IN], [ONNX_OUT]),
         ["layers", "{f}", "--strict"], r"unknown operator Frob", ("ptrre", "/graph/node/1"))
    case(O, "invalid-graph", "no_graph", field(1, 8) + field(8, field(1, "") + field(2, 17)), ["layers", "{f}"], r"", FILE)
    case(O, "invalid-graph", "empty_file", b"", ["layers", "{f}"], r"", FILE)
    # Not protobuf at all, or broken protobuf.
    good = pb_model([pb_node("Relu", ["x"], ["y"])], [ONNX_OK_IN], [ONNX_OUT])
    for name, data in [("text_as_binary", b"this is not an ONNX model\n"), ("truncated", good[: len(good) // 2]),
                       ("bad_wire_type", b"\x0f\x01\x02"), ("length_past_end", field(7, b"")[:1] + varint(1 << 30) + b"x"),
                       ("overlong_varint", b"\x08" + b"\xff" * 11), ("json_as_onnx", b'{"format": "capcalc-model/1"}\n'),
                       ("random_bytes", bytes((i * 131 + 7) % 256 for i in range(4096)))]:
        case(O, "syntax", name, data, ["layers", "{f}"], r"", FILE)
    # Nesting: messages past 256 deep (graph > node > attribute > graph ...), If past 64.
    case(O, "depth", "if_nested_70", pb_if_nested(70), ["layers", "{f}"], r"subgraphs nest more than 64 deep|nest", ("ptrre", "/graph/node/0"))
    case(O, "depth", "if_nested_100", pb_if_nested(100), ["layers", "{f}"], r"nest", FILE)
    nested = b"\x00"
    for _ in range(400):
        nested = field(6, field(1, field(5, nested)))
    case(O, "depth", "messages_400_deep", field(1, 8) + field(7, nested), ["layers", "{f}"], r"", FILE)
    case(O, "size", "declared_length_huge", field(1, 8) + varint(7 << 3 | 2) + varint((1 << 62)), ["layers", "{f}"], r"", FILE)
    case(O, "size", "big_sparse", lambda d, p: os.truncate(open(p, "wb").name, (2 << 30) + 1), ["layers", "{f}"],
         r"larger than", FILE)
    case(O, "not-a-file", "fifo", make_fifo, ["layers", "{f}"], r"not a regular file \(a FIFO\)", FILE)
    case(O, "not-a-file", "directory", lambda d, p: os.mkdir(p), ["layers", "{f}"], r"not a regular file \(a directory\)", FILE)
    # Opsets and IR versions: unknown domain with --strict.
    case(O, "invalid-graph", "ir_zero", pb_model([pb_node("Relu", ["x"], ["y"])], [ONNX_OK_IN], [ONNX_OUT], ir=0),
         ["layers", "{f}"], r"IR version 0 does not exist", PTR)
    case(O, "invalid-graph", "unknown_domain_strict",
         pb_model([pb_node("Relu", ["x"], ["y"]) + field(7, "com.nowhere")], [ONNX_OK_IN], [ONNX_OUT]),
         ["layers", "{f}", "--strict"], r"", ("ptrre", "/graph/node/0"))


# --- ONNX text (.onnxtxt) and protobuf text (.textproto) -------------------------------------

def onnx_text_cases():
    T = "onnxtxt"
    sig = "g (float[4,16] x) => (float[P,Q] y)"
    sig3 = "g (float[4,16] x) => (float[P,Q,R] y)"
    for name, text, pattern in [
            ("declared_softmax_axis", onnxtxt("g (float[4,16] x) => (float[4,16] y)", "   y = Softmax <axis = -7> (x)"), r"axis"),
            ("reshape_two_minus_one", onnxtxt(sig3, "   s = Constant <value = int64[3] {-1, 4, -1}> ()\n   y = Reshape (x, s)"), r"more than one -1"),
            ("reshape_not_inferable", onnxtxt(sig, "   s = Constant <value = int64[2] {-1, 7}> ()\n   y = Reshape (x, s)"), r"-1"),
            ("reshape_count", onnxtxt(sig, "   s = Constant <value = int64[2] {5, 5}> ()\n   y = Reshape (x, s)"), r"64 elements\) to \[5, 5\]"),
            ("reshape_zero_past_rank", onnxtxt(sig3, "   s = Constant <value = int64[3] {0, 0, 0}> ()\n   y = Reshape (x, s)"), r"input \[4, 16\] has only 2 dims"),
            ("gemm_k", onnxtxt(sig, "   y = Gemm (x, w)", "<float[15,8] w = {0}>"), r"K = 16 but B takes K = 15"),
            ("conv_channels", onnxtxt("g (float[1,3,8,8] x) => (float[1,4,6,6] y)", "   y = Conv (x, w)", "<float[4,5,3,3] w = {0}>"), r"channels"),
            ("add_broadcast", onnxtxt("g (float[4,16] x, float[4,15] z) => (float[P,Q] y)", "   y = Add (x, z)"), r"do not broadcast"),
            ("undefined_value", onnxtxt(sig, "   y = Relu (nothere)"), r"nothere"),
            ("written_twice", onnxtxt(sig, "   y = Relu (x)\n   y = Sigmoid (x)"), r"already written"),
            ("transpose_perm", onnxtxt(sig, "   y = Transpose <perm = [0, 2]> (x)"), r"not a permutation"),
            ("softmax_axis", onnxtxt(sig, "   y = Softmax <axis = -7> (x)"), r"axis -7 is out of range"),
            ("concat_rank", onnxtxt("g (float[4,16] x, float[4] z) => (float[P,Q] y)", "   y = Concat <axis = 0> (x, z)"), r""),
            ("split_sum", onnxtxt(sig, "   s = Constant <value = int64[2] {3, 3}> ()\n   a, y = Split <axis = 1> (x, s)"), r""),
            ("gather_axis", onnxtxt("g (float[4,16] x, int64[2] i) => (float[P,Q] y)", "   y = Gather <axis = 3> (x, i)"), r""),
            ("matmul_rank0", onnxtxt("g (float x, float[4,8] w) => (float[4,8] y)", "   y = MatMul (x, w)"), r""),
            ("strict_unknown", onnxtxt(sig, "   h = Relu (x)\n   y = com.example.Frob (h)"), r"unknown operator"),
            ("if_shapes", onnxtxt("g (bool c, float[4,16] x) => (float[4,N] y)",
                                  "   y = If (c) <then_branch: graph = t () => (float[4,16] a) {\n      a = Relu (x)\n   }, else_branch: graph = e () => (float[4,3,16] b) {\n      b = Unsqueeze (x, ax)\n   }>",
                                  "<int64[1] ax = {1}>"), r"different shapes"),
            ("loop_body_invalid", onnxtxt(sig, "   y = Loop (n, \"\", x) <body: graph = b (int64 i, bool c, float[4,16] h) => (bool co, float[4,16] hn) {\n      co = Identity (c)\n      hn = Gemm (h, w)\n   }>",
                                          "<int64 n = {3}, float[15,8] w = {0}>"), r"K = 16"),
            # A weight of strings (it was counted, with no parameters).
            ("matmul_string_weight", onnxtxt(sig, "   y = MatMul (x, w)", "<string[16,8] w = {\"a\"}>"),
             r"input \"w\" holds strings"),
            # More scan inputs than inputs (it was an unknown operator, counted as zero).
            ("scan_inputs_huge", onnxtxt(sig, "   y = Scan <num_scan_inputs = 1000000, body: graph = b (float[16] r) => (float[16] o) {\n      o = Relu (r)\n   }> (x)"),
             r"\(Scan\) needs num_scan_inputs M >= 1 [^\n]*\(inputs 1, num_scan_inputs 1000000\)"),
            ("scan_inputs_zero", onnxtxt(sig, "   y = Scan <num_scan_inputs = 0, body: graph = b (float[16] r) => (float[16] o) {\n      o = Relu (r)\n   }> (x)"),
             r"\(Scan\) needs num_scan_inputs M >= 1"),
            # A misspelt attribute hid the missing required one from the schema check, and ONNX's
            # Scan inference crashed on it (found by fuzzing the case above).
            ("scan_inputs_misspelt", onnxtxt(sig, "   y = Scan <num_3can_inputs = 0, body: graph = b (float[16] r) => (float[16] o) {\n      o = Relu (r)\n   }> (x)"),
             r"\(Scan\) is malformed: Required attribute 'num_scan_inputs' is missing")]:
        args = ["layers", "{f}"] + (["--strict"] if name == "strict_unknown" else [])
        case(T, "invalid-graph", name, text, args, pattern, ("ptrre", r"/graph/node/\d+"))
    # Accepted before: a graph output nothing writes (its declared shape taken on trust), and an
    # If branch with more outputs than the If (the extra one dropped), known condition or not.
    for name, command in [("output_unwritten", "layers"), ("output_unwritten_estimate", "estimate")]:
        case(T, "invalid-graph", name,
             onnxtxt("g (float[4,16] x) => (float[4,16] y, float[4,16] ghost)", "   y = Relu (x)"),
             [command, "{f}"] + (["--gpu", "a100"] if command == "estimate" else []),
             r"output \"ghost\" is written by no node", ("ptrre", "/graph/output/1"))
    # Operands ONNX's inference does not check: a bias of the wrong size, a C that does not
    # broadcast, a LayerNormalization axis past the rank (each was counted as if right).
    for name, text, pattern in [
            ("conv_bias_size", onnxtxt("g (float[1,3,8,8] x) => (float[1,4,6,6] y)", "   y = Conv (x, w, b)",
                                       "<float[4,3,3,3] w = {0}, float[7] b = {0}>"), r"the bias \[7\] is not one value per output channel \(4\)"),
            ("conv_transpose_bias_size", onnxtxt("g (float[1,4,4,4] x) => (float[1,4,9,9] y)",
                                                 "   y = ConvTranspose <group = 2, strides = [2, 2]> (x, w, b)",
                                                 "<float[4,2,3,3] w = {0}, float[3] b = {0}>"), r"the bias \[3\]"),
            ("gemm_bias_broadcast", onnxtxt("g (float[4,16] x, float[5] c) => (float[4,8] y)", "   y = Gemm (x, w, c)",
                                            "<float[16,8] w = {0}>"), r"C \[5\] does not broadcast to the output \[4, 8\]"),
            ("layernorm_axis", onnxtxt("g (float[4,16] x) => (float[4,16] y)", "   y = LayerNormalization <axis = 9> (x, s)",
                                       "<float[16] s = {0}>"), r"axis 9 is out of range"),
            ("einsum_index_sizes", onnxtxt("g (float[4,16] x, float[15,3] w) => (float[4,3] y)",
                                           '   y = Einsum <equation = "ij,jk->ik"> (x, w)'),
             r"einsum index \"j\" is 16 in one operand but 15"),
            ("cast_to_undefined", onnxtxt("g (float[4,16] x) => (float[4,16] y)", "   y = Cast <to = 0> (x)"),
             r"to = 0 is no element type")]:
        case(T, "invalid-graph", name, text, ["layers", "{f}"], pattern, ("ptrre", "/graph/node/0"))
    two = ("then_branch: graph = t () => (float[4,16] a, float[4,16] a2) {\n      a = Relu (x)\n"
           "      a2 = Sigmoid (x)\n   }, else_branch: graph = e () => (float[4,16] b) {\n"
           "      b = Relu (x)\n   }")
    for name, cond, inits in [("if_branch_outputs", "c", ""), ("if_known_branch_outputs", "k", "<bool k = {1}>")]:
        case(T, "invalid-graph", name,
             onnxtxt("g (bool c, float[4,16] x) => (float[4,16] y)", f"   y = If ({cond}) <{two}>", inits),
             ["layers", "{f}"], r"its then branch has 2 outputs for 1", ("ptrre", "/graph/node/0"))
    for name, text in [
            ("unterminated", '<ir_version: 8, opset_import: ["" : 17]>\ng (float[4] x) => (float[4] y) {\n   y = Relu (x)\n'),
            ("bad_token", onnxtxt("g (float[4] x) => (float[4] y)", "   y = Relu (x) @")),
            ("unknown_type", onnxtxt("g (flaot[4] x) => (float[4] y)", "   y = Relu (x)")),
            ("missing_paren", onnxtxt("g (float[4] x => (float[4] y)", "   y = Relu (x)")),
            ("huge_dim", onnxtxt("g (float[99999999999999999999999] x) => (float[4] y)", "   y = Relu (x)")),
            ("empty", ""), ("header_only", '<ir_version: 8, opset_import: ["" : 17]>\n'),
            ("bad_header", '<ir_version: "eight">\ng (float[4] x) => (float[4] y) {\n y = Relu (x)\n}\n'),
            ("unterminated_string", onnxtxt("g (float[4] x) => (float[4] y)", '   y = Relu <name = "abc> (x)')),
            ("attr_no_value", onnxtxt("g (float[4] x) => (float[4] y)", "   y = Softmax <axis = > (x)")),
            ("bad_utf8", b'<ir_version: 8, opset_import: ["" : 17]>\ng (float[4] x) => (float[4] y) {\n   y = R\xffelu (x)\n}\n')]:
        case(T, "syntax", name, text, ["layers", "{f}"], r"", LINE)
    case(T, "depth", "brackets_300", onnxtxt("g (float[4] x) => (float[4] y)", "   y = Relu " + "(" * 300 + "x" + ")" * 300),
         ["layers", "{f}"], r"nest more than 256 deep", LINE)
    nested = "y = Relu (x)"
    for i in range(70):
        nested = f"y = If (c) <then_branch: graph = t{i} () => (float[4] y) {{\n{nested}\n}}, else_branch: graph = e{i} () => (float[4] y) {{\n y = Relu (x)\n}}>"
    case(T, "depth", "if_nested_70", onnxtxt("g (bool c, float[4] x) => (float[4] y)", nested), ["layers", "{f}"],
         r"subgraphs nest more than 64 deep", ("ptrre", "/graph/node/0"))
    case(T, "overflow", "input_bytes", onnxtxt("g (float[4294967296,4294967296] x) => (float[4] y)", "   y = Relu (x)"),
         ["layers", "{f}"], r"64-bit", ("ptrre", "/graph/input/0"))
    case(T, "overflow", "matmul_macs", onnxtxt("g (float[4194304,4194304] x) => (float[P,Q] y)", "   y = MatMul (x, w)",
                                               "<float[4194304,4194304] w = {0}>"),
         ["estimate", "{f}", "--gpu", "a100"], r"64-bit", ("ptrre", "/graph/(node|input|initializer)/\\d+"))
    # Each count fits but the backward FLOPs (2 x MACs of the weight gradient) do not: refused
    # at load, naming the file (found by fuzzing: it loaded, then failed in graph_totals).
    case(T, "overflow", "matmul_backward_flops", onnxtxt("g (float[7308807,4194304] x) => (float[P,Q] y)",
                                                        "   y = MatMul (x, w)", "<float[4194304,194304] w = {0}>"),
         ["layers", "{f}"], r"a count does not fit in a 64-bit integer", FILE)
    case(M, "overflow", "linear_flops", model('[{"name": "fc", "op": "linear", "out_features": 194304}]',
                                               dims='{"batch": 7308807}', inputs='[{"name": "x", "shape": ["batch", 4194304]}]'),
         ["layers", "{f}"], r"a count does not fit in a 64-bit integer", FILE)
    case(T, "expansion", "loop_nested_big", onnxtxt("g (float[4] x) => (float[4] y)",
                                                    "   y = Loop (n, \"\", x) <body: graph = b1 (int64 i, bool c, float[4] h) => (bool co, float[4] hn) {\n      co = Identity (c)\n      hn = Loop (n, \"\", h) <body: graph = b2 (int64 j, bool d, float[4] k) => (bool do, float[4] kn) {\n         do = Identity (d)\n         kn = Loop (n, \"\", k) <body: graph = b3 (int64 m, bool e, float[4] l) => (bool eo, float[4] ln) {\n            eo = Identity (e)\n            ln = Relu (l)\n         }>\n      }>\n   }>",
                                                    "<int64 n = {4000}>"),
         ["layers", "{f}"], r"more than 500,000 nodes", ("ptrre", "/graph/node/0"))
    case(T, "not-a-file", "fifo", make_fifo, ["layers", "{f}"], r"not a regular file \(a FIFO\)", FILE)
    case(T, "size", "big", lambda d, p: write_big(p, 257 << 20, b" "), ["layers", "{f}"], r"larger than 256 MiB", FILE)
    case(T, "syntax", "nul", b'<ir_version: 8, opset_import: ["" : 17]>\ng (float[4] x) => (float[4] y) {\n   y = Relu (x\x00)\n}\n',
         ["layers", "{f}"], r"NUL byte", LINE)

    P = "textproto"
    x = tp_input("x", [4, 16])
    for name, graph, pattern in [
            ("gemm_k", x + '  initializer { name: "w" data_type: 1 dims: 15 dims: 8 }\n  node { input: "x" input: "w" output: "y" op_type: "Gemm" name: "g" }\n' + tp_output("y"), r"K = 16"),
            ("empty_op", x + '  node { input: "x" output: "y" name: "n" }\n' + tp_output("y"), r"no op_type"),
            ("undefined_input", x + '  node { input: "q" output: "y" op_type: "Relu" name: "r" }\n' + tp_output("y"), r"\"q\""),
            ("input_twice", x + x + '  node { input: "x" output: "y" op_type: "Relu" name: "r" }\n' + tp_output("y"), r"declared twice"),
            ("reshape_two_minus_one", x + '  initializer { name: "s" data_type: 7 dims: 3 int64_data: -1 int64_data: 2 int64_data: -1 }\n  node { input: "x" input: "s" output: "y" op_type: "Reshape" name: "r" }\n' + tp_output("y"), r"more than one -1"),
            ("init_elem_99", x + '  initializer { name: "w" data_type: 99 dims: 16 dims: 8 }\n  node { input: "x" input: "w" output: "y" op_type: "MatMul" name: "m" }\n' + tp_output("y"), r"99"),
            ("input_elem_string", tp_input("x", [4, 16], elem=8) + '  node { input: "x" output: "y" op_type: "Relu" name: "r" }\n' + tp_output("y"), r"strings"),
            ("input_dim_negative", tp_input("x", [4, -16]) + '  node { input: "x" output: "y" op_type: "Relu" name: "r" }\n' + tp_output("y"), r""),
            ("input_50_dims", tp_input("x", [1] * 50) + '  node { input: "x" output: "y" op_type: "Relu" name: "r" }\n' + tp_output("y"), r"50 dims, more than 32"),
            ("attr_ints_for_int", x + '  node { input: "x" output: "y" op_type: "Softmax" name: "s" attribute { name: "axis" ints: 1 ints: 2 type: INTS } }\n' + tp_output("y"), r"axis"),
            ("output_unwritten", x + '  node { input: "x" output: "y" op_type: "Relu" name: "r" }\n' + tp_output("zz"), r"output \"zz\" is written by no node")]:
        where = ("ptrre", r"/graph/(node|input|initializer|output)/\d+")
        case(P, "invalid-graph", name, textproto(graph), ["layers", "{f}"], pattern, where)
    for name, text in [
            ("unknown_field", "ir_version: 8\ngraf { }\n"), ("string_for_int", 'ir_version: "eight"\n'),
            ("int_too_big", "ir_version: 99999999999999999999999\n"), ("unterminated", "graph {\n  node {\n"),
            ("singular_twice", "ir_version: 8\nir_version: 9\n"), ("bad_enum", 'graph { node { attribute { name: "a" type: SIDEWAYS } } }\n'),
            ("unterminated_string", 'graph { name: "abc\n}\n'), ("colon_missing", "ir_version 8 graph x\n")]:
        case(P, "syntax", name, text, ["layers", "{f}"], r"protobuf text format", LINE)
    case(P, "duplicate", "singular_field_twice", "ir_version: 8\ngraph { name: \"a\" name: \"b\" }\n", ["layers", "{f}"],
         r"protobuf text format", LINE)
    case(P, "depth", "messages_300", "graph {\n" + 'node { attribute { g { ' * 100 + "}}}" * 100 + "\n}\n", ["layers", "{f}"],
         r"too deep", LINE)
    case(P, "not-a-file", "fifo", make_fifo, ["layers", "{f}"], r"not a regular file \(a FIFO\)", FILE)
    case(P, "overflow", "input_bytes", textproto(tp_input("x", [1 << 31, 1 << 31, 1 << 31]) + '  node { input: "x" output: "y" op_type: "Relu" name: "r" }\n' + tp_output("y")),
         ["layers", "{f}"], r"64-bit", ("ptrre", "/graph/input/0"))


# --- Hugging Face config.json ----------------------------------------------------------------

def hf_cases():
    H = "hf"
    for name, text, ptr, pattern in [
            ("hidden_string", hf(hidden_size='"256"'), "/hidden_size", ""),
            ("hidden_zero", hf(hidden_size="0"), "/hidden_size", ""),
            ("hidden_negative", hf(hidden_size="-256"), "/hidden_size", ""),
            ("hidden_float", hf(hidden_size="256.5"), "/hidden_size", ""),
            ("heads_zero", hf(num_attention_heads="0"), "/num_attention_heads", ""),
            ("heads_not_dividing", hf(num_attention_heads="3"), "/num_attention_heads", ""),
            ("kv_heads_not_dividing", hf(num_key_value_heads="3"), "/num_key_value_heads", ""),
            ("kv_heads_more", hf(num_key_value_heads="8"), "/num_key_value_heads", ""),
            ("layers_zero", hf(num_hidden_layers="0"), "/num_hidden_layers", ""),
            ("layers_huge", hf(num_hidden_layers="20000"), "/num_hidden_layers", r"[0-9,]+ layers is more than 10,000"),
            ("layers_2e63", hf(num_hidden_layers="9223372036854775807"), "/num_hidden_layers", r"[0-9,]+ layers is more than 10,000"),
            ("vocab_overflow", hf(vocab_size="4611686018427387904", hidden_size="4096"), "/", r"64-bit|fit"),
            ("intermediate_overflow", hf(intermediate_size="4611686018427387904"), "/", r"64-bit|fit"),
            ("model_type_unknown", hf(model_type='"lama"'), "/model_type", r"unsupported model_type \"lama\""),
            ("model_type_number", hf(model_type="7"), "/model_type", ""),
            ("architectures_string", hf(architectures='"LlamaForCausalLM"'), "/architectures", ""),
            ("layer_types_object", hf(layer_types='{"a": 1}'), "/layer_types", ""),
            ("layer_types_long", hf(layer_types='["full_attention", "full_attention", "full_attention"]'), "/layer_types", "expected 2 entries"),
            ("experts_per_tok_more", hf(model_type='"mixtral"', num_local_experts="4", num_experts_per_tok="8"), "/num_experts_per_tok", ""),
            ("experts_zero", hf(model_type='"mixtral"', num_local_experts="0", num_experts_per_tok="2"), "/num_local_experts", ""),
            ("head_dim_zero", hf(head_dim="0"), "/head_dim", ""),
            ("sliding_window_negative", hf(model_type='"mistral"', sliding_window="-1"), "/sliding_window", ""),
            ("rope_scaling_string", hf(rope_scaling='"linear"'), "/rope_scaling", ""),
            ("tie_string", hf(tie_word_embeddings='"yes"'), "/tie_word_embeddings", ""),
            # Keys the importer does not read, checked for their type all the same.
            ("rms_norm_eps_string", hf(rms_norm_eps='"1e-5"'), "/rms_norm_eps", r"expected a number"),
            ("rope_theta_object", hf(rope_theta='{"base": 10000}'), "/rope_theta", r"expected a number"),
            ("torch_dtype_number", hf(torch_dtype="16"), "/torch_dtype", r"expected a string"),
            ("use_cache_string", hf(use_cache='"true"'), "/use_cache", r"expected true or false"),
            ("text_config_number", hf(text_config="7"), "/text_config", r"expected an object or null"),
            ("model_type_empty", hf(model_type='""', architectures='["LlamaForCausalLM"]'), "/model_type", r"an empty model_type"),
            # DeepSeek's router keys, not read either (a string count passed).
            ("n_group_string", hf(n_group='"8"'), "/n_group", r"expected an integer"),
            ("topk_group_negative", hf(topk_group="-4"), "/topk_group", r"expected a count, 0 or more"),
            ("scoring_func_number", hf(scoring_func="1"), "/scoring_func", r"expected a string"),
            ("norm_topk_prob_string", hf(norm_topk_prob='"true"'), "/norm_topk_prob", r"expected true or false"),
            ("hidden_missing", hf(hidden_size=None), "/hidden_size", r"missing required key")]:
        case(H, "type" if "overflow" not in name and "huge" not in name and "2e63" not in name else
             ("overflow" if "overflow" in name else "expansion"),
             name, text, ["layers", "{f}"], re.escape(ptr) + ": " + pattern, PTR)
    case(H, "duplicate", "dup_hidden", '{"model_type": "llama", "hidden_size": 256, "hidden_size": 512, "intermediate_size": 512,\n "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 1000}\n',
         ["layers", "{f}"], r"duplicate key \"hidden_size\"", LINE)
    case(H, "duplicate", "dup_nested", hf(rope_scaling='{"type": "linear", "type": "dynamic", "factor": 2}'),
         ["layers", "{f}"], r"duplicate key \"type\" in the object at /rope_scaling", LINE)
    case(H, "depth", "deep_extra_key", hf(task_specific_params="[" * 300 + "]" * 300), ["layers", "{f}"],
         r"nest more than 256 deep", LINE)
    case(H, "syntax", "truncated", hf()[:40], ["layers", "{f}"], r"", LINE)
    case(H, "expansion", "layers_compare", hf(num_hidden_layers="1000000000"), ["compare", "{f}", "--hw", "a100,h100"],
         r"/num_hidden_layers: ", PTR)


# --- Hardware file ---------------------------------------------------------------------------

def hardware_cases():
    W = "hardware"
    args = ["estimate", "data/models/resnet50.json", "--gpu", "my-gpu", "--hardware-file", "{f}"]
    physics = [
        ("peak_negative", dict(dense_peak_tflops='{"fp16": {"matrix": -100}, "fp32": {"vector": 10}}'), "/devices/0/dense_peak_tflops/fp16/matrix"),
        ("peak_zero", dict(dense_peak_tflops='{"fp16": {"matrix": 0}, "fp32": {"vector": 10}}'), "/devices/0/dense_peak_tflops/fp16/matrix"),
        ("peak_1e8", dict(dense_peak_tflops='{"fp16": {"matrix": 1e8}, "fp32": {"vector": 10}}'), "/devices/0/dense_peak_tflops/fp16/matrix"),
        ("peak_tiny", dict(dense_peak_tflops='{"fp16": {"matrix": 1e-9}, "fp32": {"vector": 10}}'), "/devices/0/dense_peak_tflops/fp16/matrix"),
        ("vector_huge", dict(dense_peak_tflops='{"fp32": {"vector": 1e300}}'), "/devices/0/dense_peak_tflops/fp32/vector"),
        ("memory_zero", dict(memory_gb="0"), "/devices/0/memory_gb"),
        ("memory_negative", dict(memory_gb="-80"), "/devices/0/memory_gb"),
        ("memory_huge", dict(memory_gb="1e9"), "/devices/0/memory_gb"),
        ("memory_tiny", dict(memory_gb="1e-9"), "/devices/0/memory_gb"),
        ("bandwidth_zero", dict(memory_bandwidth_gb_per_s="0"), "/devices/0/memory_bandwidth_gb_per_s"),
        ("bandwidth_huge", dict(memory_bandwidth_gb_per_s="1e9"), "/devices/0/memory_bandwidth_gb_per_s"),
        ("bandwidth_tiny", dict(memory_bandwidth_gb_per_s="1e-4"), "/devices/0/memory_bandwidth_gb_per_s"),
        ("tdp_negative", dict(tdp_w="-300"), "/devices/0/tdp_w"),
        ("tdp_zero", dict(tdp_w="0"), "/devices/0/tdp_w"),
        ("efficiency_over_1", dict(performance='{"matrix_efficiency": 1.5}'), "/devices/0/performance/matrix_efficiency"),
        ("efficiency_zero", dict(performance='{"memory_efficiency": 0}'), "/devices/0/performance/memory_efficiency"),
        ("overhead_negative", dict(performance='{"eager_overhead_us": -5}'), "/devices/0/performance/eager_overhead_us"),
        ("price_negative", dict(price_per_hour_usd='{"value": -2, "date": "2026-01", "source": "https://example.invalid/p"}'), "/devices/0/price_per_hour_usd/value"),
        ("price_huge", dict(price_per_hour_usd='{"value": 1e300, "date": "2026-01", "source": "https://example.invalid/p"}'), "/devices/0/price_per_hour_usd/value"),
        ("sparsity_below_1", dict(sparsity_2_4_speedup="0.5"), "/devices/0/sparsity_2_4_speedup"),
    ]
    for name, over, ptr in physics:
        case(W, "physics", name, hardware(device(**over)), args, re.escape(ptr) + ": ", PTR)
    types = [
        ("devices_object", '{"schema_version": 1, "devices": {"id": "x"}}\n', "/devices"),
        ("schema_version_2", '{"schema_version": 2, "devices": []}\n', "/schema_version"),
        ("schema_version_string", '{"schema_version": "1", "devices": []}\n', "/schema_version"),
        ("id_number", hardware(device(id="7")), "/devices/0/id"),
        ("id_empty", hardware(device(id='""')), "/devices/0/id"),
        ("type_unknown", hardware(device(type='"gpuu"')), "/devices/0/type"),
        ("precision_unknown", hardware(device(dense_peak_tflops='{"fp17": {"matrix": 10}}')), "/devices/0/dense_peak_tflops/fp17"),
        ("unit_unknown", hardware(device(dense_peak_tflops='{"fp16": {"tensor": 10}}')), "/devices/0/dense_peak_tflops/fp16/tensor"),
        ("peak_string", hardware(device(dense_peak_tflops='{"fp16": {"matrix": "100"}}')), "/devices/0/dense_peak_tflops/fp16/matrix"),
        ("unknown_key", hardware(device(memroy_gb="80")), "/devices/0"),
        ("sources_empty", hardware(device(sources="[]")), "/devices/0/sources"),
        ("sources_number", hardware(device(sources="[1]")), "/devices/0/sources/0"),
        ("aliases_string", hardware(device(aliases='"x"')), "/devices/0/aliases"),
        ("memory_missing", hardware(device(memory_gb=None)), "/devices/0"),
        ("same_id_twice", '{"schema_version": 1, "devices": [{' + device() + '}, {' + device() + '}]}\n', "/devices/1/id"),
        ("alias_twice", '{"schema_version": 1, "devices": [{' + device(aliases='["G"]') + '}, {' + device(id='"other-gpu"', aliases='["G"]') + '}]}\n', "/devices/1/aliases/0"),
        ("alias_builtin_a100", hardware(device(aliases='["A100"]')), "/devices/0/aliases/0"),
        ("performance_unknown_key", hardware(device(performance='{"matrix_eficiency": 0.5}')), "/devices/0/performance"),
        ("vendor_number", hardware(device(vendor="3")), "/devices/0/vendor"),
        ("date_bad", hardware(device(price_per_hour_usd='{"value": 2, "date": "2026-02-30", "source": "https://example.invalid/p"}')), "/devices/0/price_per_hour_usd/date"),
        ("root_array", "[]\n", "/"),
    ]
    for name, text, ptr in types:
        case(W, "type", name, text, args, re.escape(ptr) + r"(: |/)", PTR)
    case(W, "duplicate", "dup_device_key", hardware(device() + ', "memory_gb": 40'), args, r"duplicate key \"memory_gb\"", LINE)
    case(W, "duplicate", "dup_peak", hardware(device(dense_peak_tflops='{"fp16": {"matrix": 100, "matrix": 200}}')), args,
         r"duplicate key \"matrix\" in the object at /devices/0/dense_peak_tflops/fp16", LINE)
    case(W, "depth", "deep_comment", hardware(device(), top='"comment": ' + "[" * 300 + "]" * 300 + ", "), args,
         r"nest more than 256 deep", LINE)
    case(W, "syntax", "truncated", hardware(device())[:-10], args, r"", LINE)
    case(W, "not-a-file", "fifo", make_fifo, args, r"not a regular file \(a FIFO\)", FILE)
    case(W, "size", "big", lambda d, p: write_big(p, 65 << 20, b"\n"), args, r"larger than 64 MiB", FILE)
    case(W, "not-a-file", "table_dev_zero", None, ["hw", "list", "--hardware", "/dev/zero"], r"^capcalc: error: /dev/zero: not a regular file", "/dev/zero")


# --- Runtime file ----------------------------------------------------------------------------

def runtime_cases():
    R = "runtime"
    args = ["estimate", "data/models/resnet50.json", "--gpu", "a100", "--runtime", "my-rt", "--runtime-file", "{f}"]
    for name, text, ptr in [
            ("profile_unknown", runtime(RUNTIME.replace('"eager"', '"eagre"')), "/runtimes/0/profile"),
            ("device_type_unknown", runtime(RUNTIME.replace('["gpu"]', '["gpuu"]')), "/runtimes/0/device_types/0"),
            ("kernels_negative", runtime(RUNTIME + ', "kernels": {"attention": -1}'), "/runtimes/0/kernels/attention"),
            ("kernels_huge", runtime(RUNTIME + ', "kernels": {"attention": 1e12}'), "/runtimes/0/kernels/attention"),
            ("kernels_unknown_class", runtime(RUNTIME + ', "kernels": {"atention": 2}'), "/runtimes/0/kernels/atention"),
            ("id_empty", runtime(RUNTIME.replace('"my-rt"', '""')), "/runtimes/0/id"),
            ("id_number", runtime(RUNTIME.replace('"my-rt"', "5")), "/runtimes/0/id"),
            ("unknown_key", runtime(RUNTIME + ', "profil": "eager"'), "/runtimes/0"),
            ("runtimes_object", '{"schema_version": 1, "runtimes": {}}\n', "/runtimes"),
            ("schema_version_3", '{"schema_version": 3, "runtimes": []}\n', "/schema_version"),
            ("sources_missing", runtime(RUNTIME.replace(', "sources": ["https://example.invalid/rt"]', "")), "/runtimes/0"),
            ("name_empty", runtime(RUNTIME.replace('"My runtime"', '""')), "/runtimes/0/name"),
            ("alias_of_builtin", runtime(RUNTIME + ', "aliases": ["eager"]'), "/runtimes/0/aliases/0"),
            ("comment_number", runtime(RUNTIME + ', "comment": 5'), "/runtimes/0/comment")]:
        case(R, "type", name, text, args, re.escape(ptr) + r"(: |/)", PTR)
    case(R, "duplicate", "dup_kernel", runtime(RUNTIME + ', "kernels": {"attention": 2, "attention": 3}'), args,
         r"duplicate key \"attention\"", LINE)
    case(R, "duplicate", "dup_id_in_file", '{"schema_version": 1, "runtimes": [{' + RUNTIME + '}, {' + RUNTIME + '}]}\n', args,
         r"/runtimes/1: \"my-rt\" already names runtime", PTR)
    case(R, "depth", "deep", runtime(RUNTIME, top='"comment": ' + "{\"a\": " * 300 + "1" + "}" * 300 + ", "), args,
         r"nest more than 256 deep", LINE)
    case(R, "syntax", "not_json", "runtimes:\n  - id: my-rt\n", args, r"", LINE)
    case(R, "not-a-file", "fifo", make_fifo, args, r"not a regular file \(a FIFO\)", FILE)


# --- Budget ----------------------------------------------------------------------------------

def budget_cases():
    B = "budget"
    args = ["check", "--budget", "{f}"]
    for name, entry, ptr in [
            ("limit_unknown", BUDGET.replace("max_latency", "max_latncy"), "/budgets/0/limits/max_latncy"),
            ("limit_unit", BUDGET.replace('"1s"', '"1 parsec"'), "/budgets/0/limits/max_latency"),
            ("limit_negative", BUDGET.replace('"1s"', '"-5ms"'), "/budgets/0/limits/max_latency"),
            ("limit_nan", BUDGET.replace('"1s"', '"nanms"'), "/budgets/0/limits/max_latency"),
            ("limit_number", BUDGET.replace('"1s"', "1"), "/budgets/0/limits/max_latency"),
            ("memory_limit_bad", BUDGET.replace('"max_latency": "1s"', '"max_memory": "16 GiBB"'), "/budgets/0/limits/max_memory"),
            ("devices_empty", BUDGET.replace('["a100"]', "[]"), "/budgets/0/devices"),
            ("device_unknown", BUDGET.replace('["a100"]', '["z100"]'), "/budgets/0/devices/0"),
            ("device_number", BUDGET.replace('["a100"]', "[100]"), "/budgets/0/devices/0"),
            ("precision_unknown", BUDGET + ', "precision": "fp7"', "/budgets/0/precision"),
            ("mode_unknown", BUDGET + ', "mode": "infer"', "/budgets/0/mode"),
            ("batch_zero", BUDGET + ', "batch": 0', "/budgets/0/batch"),
            ("batch_float", BUDGET + ', "batch": 2.5', "/budgets/0/batch"),
            ("batch_string", BUDGET + ', "batch": "8"', "/budgets/0/batch"),
            ("model_missing_key", BUDGET.replace('"model": "' + UP + 'data/models/resnet50.json", ', ""), "/budgets/0"),
            ("model_number", BUDGET.replace('"' + UP + 'data/models/resnet50.json"', "5"), "/budgets/0/model"),
            ("model_zoo_unknown", BUDGET.replace('"' + UP + 'data/models/resnet50.json"', '"resnet5"'), "/budgets/0/model"),
            ("set_unknown_dim", BUDGET + ', "set": {"sequence": 4}', "/budgets/0/set/sequence"),
            ("set_string", BUDGET + ', "set": {"batch": "x"}', "/budgets/0/set/batch"),
            ("tensor_parallel_zero", BUDGET + ', "tensor_parallel": 0', "/budgets/0/tensor_parallel"),
            ("zero_5", BUDGET + ', "zero": 5, "mode": "training"', "/budgets/0/zero"),
            # The input pipeline's rate (--input-rate): a rate, above 0, at most 1e9/s.
            ("input_rate_number", BUDGET + ', "input_rate": 3000', "/budgets/0/input_rate"),
            ("input_rate_word", BUDGET + ', "input_rate": "fast"', "/budgets/0/input_rate"),
            ("input_rate_huge", BUDGET + ', "input_rate": "1e12/s"', "/budgets/0/input_rate"),
            ("unknown_key", BUDGET + ', "batchsize": 8', "/budgets/0"),
            ("limits_empty", BUDGET.replace('{"max_latency": "1s"}', "{}"), "/budgets/0"),
            ("epochs_negative", BUDGET + ', "mode": "training", "dataset_size": 1000, "epochs": -1', "/budgets/0/epochs"),
            ("dataset_nan_string", BUDGET + ', "mode": "training", "dataset_size": "nan"', "/budgets/0/dataset_size"),
            ("tokens_huge", BUDGET + ', "mode": "training", "tokens": 1e300', "/budgets/0/tokens"),
            ("device_count_huge", BUDGET + ', "device_count": 1099511627776', "/budgets/0/device_count"),
            ("runtime_unknown", BUDGET + ', "runtime": "pytorch-eagre"', "/budgets/0/runtime")]:
        case(B, "type", name, budget(entry), args, re.escape(ptr) + r"(: |/)", PTR)
    for name, text, ptr in [
            ("budgets_empty", '{"schema_version": 1, "budgets": []}\n', "/budgets"),
            ("budgets_object", '{"schema_version": 1, "budgets": {}}\n', "/budgets"),
            ("schema_version_9", '{"schema_version": 9, "budgets": [{' + BUDGET + "}]}\n", "/schema_version"),
            ("comment_array", budget(BUDGET, top='"comment": [1], '), "/comment")]:
        case(B, "type", name, text, args, re.escape(ptr) + r"(: |/)", PTR)
    case(B, "overflow", "set_overflow", budget(BUDGET.replace("resnet50.json", "llama2_7b.json") + ', "set": {"seq": 4294967296}'),
         args, r":/budgets/0: a count does not fit in a 64-bit integer \(with seq = 4294967296\)", PTR)
    case(B, "overflow", "batch_overflow", budget(BUDGET + ', "batch": 9223372036854775807, "mode": "training"'),
         args, r":/budgets/0: a count does not fit in a 64-bit integer \(with batch = 9223372036854775807\)", PTR)
    case(B, "duplicate", "dup_budget_key", budget(BUDGET + ', "batch": 1, "batch": 2'), args, r"duplicate key \"batch\"", LINE)
    case(B, "duplicate", "dup_top", '{"schema_version": 1, "budgets": [], "budgets": []}\n', args, r"duplicate key \"budgets\"", LINE)
    case(B, "depth", "deep", budget(BUDGET + ', "set": ' + "[" * 300 + "]" * 300), args, r"nest more than 256 deep", LINE)
    case(B, "syntax", "truncated", budget(BUDGET)[:-5], args, r"", LINE)
    case(B, "not-a-file", "model_fifo", lambda d, p: (os.mkfifo(os.path.join(d, "budget_model.fifo")), open(p, "w").write(
        budget(BUDGET.replace(UP + "data/models/resnet50.json", "budget_model.fifo")))),
         args, r"/budgets/0/model: [^\n]*budget_model.fifo: not a regular file \(a FIFO\)", PTR)
    case(B, "not-a-file", "model_dev_urandom", budget(BUDGET.replace(UP + "data/models/resnet50.json", "/dev/urandom")),
         args, r"/budgets/0/model: /dev/urandom: not a regular file", PTR)
    case(B, "not-a-file", "fifo", make_fifo, args, r"not a regular file \(a FIFO\)", FILE)
    # What is wrong inside a budget's model stays the model's (src/budget.cpp): its own place.
    case(B, "syntax", "model_bad_file", budget(BUDGET.replace(UP + 'data/models/resnet50.json', "../model/trailing_comma.json")),
         args, r"", ("literal", "tests/hostile/corpus/budget/../model/trailing_comma.json:1:28: "))
    case(B, "expansion", "model_repeat_huge", budget(BUDGET.replace(UP + "data/models/resnet50.json", "../model/repeat_1e7.json")),
         args, r"250,000 layers", ("literal", "tests/hostile/corpus/budget/../model/repeat_1e7.json:/layers/0/repeat: "))


# --- Measurement file ------------------------------------------------------------------------

def measurement_cases():
    E = "measurements"
    args = ["validate", "--models", "data/models", "--measurements", "{f}"]
    for name, over, ptr in [
            ("metric_unknown", dict(metric='"throughput_per_hour"'), "/cases/0/metric"),
            ("value_negative", dict(value="-2000"), "/cases/0/value"),
            ("value_zero", dict(value="0"), "/cases/0/value"),
            ("value_string", dict(value='"2000"'), "/cases/0/value"),
            ("precision_unknown", dict(precision='"fp12"'), "/cases/0/precision"),
            ("mode_unknown", dict(mode='"train"'), "/cases/0/mode"),
            ("device_unknown", dict(device='"A1000"'), "/cases/0/device"),
            ("device_number", dict(device="100"), "/cases/0/device"),
            ("model_missing_file", dict(model='"no_such_model.json"'), "/cases/0/model"),
            ("dims_unknown", dict(dims='{"btach": 64}'), "/cases/0/dims/btach"),
            ("dims_zero", dict(dims='{"batch": 0}'), "/cases/0/dims/batch"),
            ("source_empty", dict(source='""'), "/cases/0/source"),
            ("quote_missing", dict(quote=None), "/cases/0"),
            ("id_number", dict(id="1"), "/cases/0/id"),
            ("unknown_key", dict(vaule="1"), "/cases/0"),
            ("mfu_over_1", dict(metric='"mfu"', value="1.5", mode='"training"'), "/cases/0/value"),
            ("tokens_negative", dict(tokens="-5"), "/cases/0/tokens"),
            ("devices_zero", dict(devices="0"), "/cases/0/devices"),
            # A unit that is no unit of the metric was free text (images/s read as anything).
            ("unit_wrong", dict(unit='"furlongs"'), "/cases/0/unit"),
            ("unit_of_other_metric", dict(unit='"tokens/s"'), "/cases/0/unit")]:
        case(E, "type" if name not in ("value_negative", "value_zero", "mfu_over_1") else "physics", name,
             measurements(measurement(**over)), args, re.escape(ptr) + r"(: |/)", PTR)
    for name, text, ptr in [
            ("cases_object", '{"schema_version": 1, "cases": {}}\n', "/cases"),
            ("schema_version_0", '{"schema_version": 0, "cases": [{' + measurement() + "}]}\n", "/schema_version"),
            ("same_id_twice", '{"schema_version": 1, "cases": [{' + measurement() + "}, {" + measurement() + "}]}\n", "/cases/1/id")]:
        case(E, "type", name, text, args, re.escape(ptr) + r"(: |/)", PTR)
    case(E, "physics", "calibrate_value_tiny", measurements(measurement(value="1e-300")),
         ["calibrate", "--models", "data/models", "{f}", "-o", "{made}/never.json"], r"/cases/0/value: ", PTR)
    case(E, "duplicate", "dup_dims", measurements(measurement(dims='{"batch": 64, "batch": 32}')), args,
         r"duplicate key \"batch\" in the object at /cases/0/dims", LINE)
    case(E, "depth", "deep", measurements(measurement(notes="[" * 300 + "]" * 300)), args, r"nest more than 256 deep", LINE)
    case(E, "syntax", "truncated", measurements(measurement())[:30], args, r"", LINE)
    case(E, "not-a-file", "fifo", make_fifo, args, r"not a regular file \(a FIFO\)", FILE)
    case(E, "overflow", "batch_overflow", measurements(measurement(dims='{"batch": 4611686018427387904}', mode='"training"')), args,
         r":/cases/0/dims: a count does not fit in a 64-bit integer", PTR)


# --- Serve trace (JSON lines) ----------------------------------------------------------------

def trace_cases():
    S = "trace"
    args = ["serve", "data/models/llama2_7b.json", "--gpu", "h100", "--trace", "{f}"]
    ok = '{"arrival_s": 0, "prompt_tokens": 100, "output_tokens": 10}\n'
    for name, line2, where, pattern in [
            ("arrival_negative", '{"arrival_s": -1, "prompt_tokens": 100, "output_tokens": 10}', ":2:/arrival_s: ", ""),
            ("arrival_huge", '{"arrival_s": 1e300, "prompt_tokens": 100, "output_tokens": 10}', ":2:/arrival_s: ", ""),
            ("prompt_zero", '{"arrival_s": 1, "prompt_tokens": 0, "output_tokens": 10}', ":2:/prompt_tokens: ", ""),
            ("prompt_float", '{"arrival_s": 1, "prompt_tokens": 1.5, "output_tokens": 10}', ":2:/prompt_tokens: ", ""),
            ("prompt_huge", '{"arrival_s": 1, "prompt_tokens": 1000000000, "output_tokens": 10}', ":2:/prompt_tokens: ", ""),
            ("prompt_2e63", '{"arrival_s": 1, "prompt_tokens": 99999999999999999999, "output_tokens": 10}', ":2:/prompt_tokens: ", ""),
            ("output_string", '{"arrival_s": 1, "prompt_tokens": 100, "output_tokens": "10"}', ":2:/output_tokens: ", ""),
            ("unknown_key", '{"arrival_s": 1, "prompt_tokens": 100, "output_tokens": 10, "priority": 1}', ":2:/", ""),
            ("missing_key", '{"arrival_s": 1, "prompt_tokens": 100}', ":2:/", ""),
            ("not_object", "[1, 100, 10]", ":2:/", "")]:
        case(S, "type", name, ok + line2 + "\n", args, re.escape(where) + pattern, ("literal", "{f}"))
    case(S, "type", "back_in_time", '{"arrival_s": 5, "prompt_tokens": 100, "output_tokens": 10}\n' +
         '{"arrival_s": 4, "prompt_tokens": 100, "output_tokens": 10}\n', args, r":2:/arrival_s: arrivals must not go back in time", ("literal", "{f}"))
    case(S, "syntax", "bad_json_line", ok + '{"arrival_s": 1, "prompt_tokens": 100,, "output_tokens": 10}\n', args, r":2:\d+: ", ("literal", "{f}"))
    case(S, "syntax", "two_objects_one_line", ok.strip() + " " + ok, args, r":1:\d+: ", ("literal", "{f}"))
    case(S, "syntax", "nul", ok + '{"arrival_s": 1,\x00 "prompt_tokens": 100, "output_tokens": 10}\n', args, r":2:\d+: [^\n]*NUL", ("literal", "{f}"))
    case(S, "type", "empty", "", args, r":1:1: the trace has no requests", ("literal", "{f}"))
    case(S, "type", "blank_lines", "\n  \n\t\n", args, r":3:1: the trace has no requests", ("literal", "{f}"))
    case(S, "duplicate", "dup_key", ok + '{"arrival_s": 1, "arrival_s": 2, "prompt_tokens": 100, "output_tokens": 10}\n', args,
         r":2:\d+: duplicate key \"arrival_s\"", ("literal", "{f}"))
    case(S, "depth", "deep_line", ok + "[" * 300 + "]" * 300 + "\n", args, r":2:\d+: [^\n]*nest more than 256 deep", ("literal", "{f}"))
    case(S, "not-a-file", "fifo", make_fifo, args, r"not a regular file \(a FIFO\)", FILE)
    case(S, "size", "many_requests", lambda d, p: open(p, "w").write("{}\n" * 1_000_001),
         args, r":1000001:1: more than 1,000,000 requests \(the limit\)", ("literal", "{f}"))
    case(S, "reference", "with_rate", ok, args + ["--rate", "5/s"], r"--trace", FLAG)
    case(S, "not-a-file", "directory", lambda d, p: os.mkdir(p), args, r"not a regular file \(a directory\)", FILE)


# --- serve --mix and serve --validate files -----------------------------------------------------

def mix_file(workload, top=""):
    return ('{"schema_version": 1, ' + top + '"devices": ["h100", "l4"], "workloads": [\n  {' +
            workload + '}]}\n')


MIX_WORKLOAD = ('"name": "chat", "model": "llama3_8b", "rate": "2/s", "prompt_tokens": 200, '
                '"output_tokens": 50, "slo": "ttft_p99=2s", "requests": 100')


def make_mix_beside(what):
    """A mix file whose workload's model, x.json, is beside it and is `what` ("fifo", "dir")."""
    def make(directory, path):
        beside = os.path.join(os.path.dirname(path), "x.json")
        if os.path.lexists(beside):
            os.remove(beside) if not os.path.isdir(beside) else os.rmdir(beside)
        os.mkfifo(beside) if what == "fifo" else os.mkdir(beside)
        with open(path, "w") as f:
            f.write(mix_file(MIX_WORKLOAD.replace('"llama3_8b"', '"x.json"')))
    return make


def mix_cases():
    X = "mix"
    args = ["serve", "--mix", "{f}"]
    # A model that does not open is the workload's "model" key's error (it named x.json alone,
    # looked up from the working folder: the FIFO beside the mix was not even tried).
    for what in ["fifo", "dir"]:
        case(X, "not-a-file", f"model_{what}_beside", make_mix_beside(what), args,
             r"/workloads/0/model: [^\n]*x.json: not a regular file", ("ptrre", "/workloads/0/model"))
    case(X, "reference", "model_missing", mix_file(MIX_WORKLOAD.replace('"llama3_8b"', '"nowhere.json"')),
         args, r"/workloads/0/model: nowhere.json: cannot open file", ("ptrre", "/workloads/0/model"))
    # An unknown device is an error at its place, not a candidate that "misses the SLO" (exit 1).
    case(X, "reference", "device_unknown", mix_file(MIX_WORKLOAD + ', "devices": ["t4", "z100"]'),
         args, r"unknown device \"z100\"; did you mean", ("ptrre", "/workloads/0/devices/1"))
    case(X, "reference", "top_device_empty", mix_file(MIX_WORKLOAD).replace('["h100", "l4"]', '["h100", ""]'),
         args, r"unknown device \"\"", ("ptrre", "/devices/1"))
    # A rate the simulator's clock cannot carry is the key's error (it said "--rate must be ...",
    # a flag the file does not have, for each candidate, and exit 1).
    # A prompt past the request limit is the key's error (2^40 tokens made every device "not
    # fit" and the run exit 1, no candidate).
    case(X, "overflow", "prompt_huge", mix_file(MIX_WORKLOAD.replace('"prompt_tokens": 200', '"prompt_tokens": 1099511627776')),
         args, r"/workloads/0/prompt_tokens: prompt_tokens: at most 100,000,000 tokens a request",
         ("ptrre", "/workloads/0/prompt_tokens"))
    for name, rate in [("rate_huge", "1e300/s"), ("rate_tiny", "1e-300/s")]:
        case(X, "physics", name, mix_file(MIX_WORKLOAD.replace('"2/s"', f'"{rate}"')), args,
             r"/workloads/0/rate: a rate must be between 1e-6/s and 1e9/s", ("ptrre", "/workloads/0/rate"))


def serving_file(entry, top=""):
    return '{"schema_version": 1, ' + top + '"cases": [\n  {' + entry + '}]}\n'


def serving_case(**over):
    fields = {"id": '"a"', "runtime": '"vllm"', "model": '"llama3_8b.json"', "device": '"h100"',
              "devices": "1", "tensor_parallel": "1", "precision": '"bf16"', "prompt_tokens": "128",
              "output_tokens": "128", "requests": "100", "slo": "null",
              "metric": '"output_tokens_per_s"', "value": "1000", "unit": '"tokens/s"',
              "per": '"total"', "software": '"v"', "source": '"https://example.invalid/b"',
              "quote": '"q"'}
    fields.update(over)
    return ", ".join(f'"{k}": {v}' for k, v in fields.items())


def serving_cases():
    V = "serving"
    args = ["serve", "--validate", "{f}"]
    # Keys the reader did not check: each was accepted, and a case ran with it.
    for name, over, key, pattern in [
            ("per_half", {"per": '"half"'}, "per", r"expected \"total\""),
            ("per_number", {"per": "2"}, "per", r"expected a string"),
            ("unit_number", {"unit": "7"}, "unit", r"expected a string"),
            ("software_object", {"software": '{"v": 1}'}, "software", r"expected a string"),
            ("notes_array", {"notes": '["n"]'}, "notes", r"expected a string"),
            ("precision_empty", {"precision": '""'}, "precision", r"unknown precision"),
            ("precision_unknown", {"precision": '"fp7"'}, "precision", r"unknown precision"),
            ("kv_precision_unknown", {"kv_precision": '"int3"'}, "kv_precision", r"unknown precision"),
            ("runtime_empty", {"runtime": '""'}, "runtime", r"needs the runtime"),
            ("id_empty", {"id": '""'}, "id", r"needs an id"),
            ("quote_empty", {"quote": '""'}, "quote", r"must not be empty")]:
        case(V, "type", name, serving_file(serving_case(**over)), args, pattern,
             ("ptrre", "/cases/0/" + key))
    for name, value in [("value_tiny", "1e-320"), ("value_huge", "1e308")]:
        case(V, "physics", name, serving_file(serving_case(value=value)), args,
             r"outside the range of a measurement", ("ptrre", "/cases/0/value"))
    case(V, "type", "description_number", serving_file(serving_case(), top='"description": 7, '),
         args, r"expected a string", ("ptrre", "/description"))


# --- Zoo names and flags ---------------------------------------------------------------------

def zoo_and_flag_cases():
    Z = "zoo"
    for name, model_arg, pattern in [("misspelt", "resnet5", r"did you mean"), ("case", "ResNet-500", r""),
                                     ("empty", "", r""), ("traversal", "../../etc/passwd", r""),
                                     ("directory_name", "data", r"directory|not a|unknown"),
                                     ("json_suffix_missing", "data/models/resnet50", r""),
                                     ("spaces", "resnet 50", r""), ("very_long", "r" * 5000, r"")]:
        case(Z, "reference", name, None, ["estimate", model_arg, "--gpu", "a100"], pattern, ("anyloc", None))
    for name, gpu in [("gpu_unknown", "a1000"), ("gpu_empty", ""), ("gpu_list_bad", "a100,,h100")]:
        case(Z, "reference", name, None, ["estimate", "resnet50", "--gpu", gpu], r"", ("anyloc", None))
    case(Z, "reference", "runtime_unknown", None, ["estimate", "resnet50", "--gpu", "a100", "--runtime", "vllm-0"], r"did you mean", FLAG)
    F = "flags"
    flags = [
        ("batch_zero", ["--batch", "0"]), ("batch_negative", ["--batch", "-1"]), ("batch_float", ["--batch", "1.5"]),
        ("batch_nan", ["--batch", "nan"]), ("batch_inf", ["--batch", "inf"]), ("batch_1e400", ["--batch", "1e400"]),
        ("batch_2e64", ["--batch", "99999999999999999999"]), ("batch_hex", ["--batch", "0x10"]), ("batch_empty", ["--batch", ""]),
        ("precision_unknown", ["--precision", "fp7"]), ("mode_unknown", ["--mode", "infer"]),
        ("set_no_equals", ["--set", "batch"]), ("set_unknown", ["--set", "sequence=4"]), ("set_nan", ["--set", "batch=nan"]),
        ("set_overflow", ["--set", "batch=99999999999999999999"]), ("devices_zero", ["--devices", "0"]),
        ("zero_4", ["--mode", "training", "--zero", "4"]), ("top_text", ["--top", "abc"]),
        ("epochs_negative", ["--mode", "training", "--dataset-size", "1000", "--epochs", "-1"]),
        ("dataset_zero", ["--mode", "training", "--dataset-size", "0"]), ("price_negative", ["--mode", "training", "--tokens", "1e9", "--price-per-hour", "-1"]),
        ("format_xml", ["--format", "xml"]), ("profile_fast", ["--profile", "fast"]), ("sparsity_3_4", ["--sparsity", "3:4"]),
        ("causal_quarter", ["--causal", "quarter"]), ("unknown_option", ["--bacth", "8"]),
        ("tp_zero", ["--tensor-parallel", "0"]), ("tp_overflow", ["--tensor-parallel", "4294967296", "--pipeline-parallel", "4294967296", "--mode", "training"]),
        ("micro_batches_zero", ["--mode", "training", "--pp", "2", "--micro-batches", "0"]),
        ("optimizer_in_inference", ["--optimizer", "adam"]), ("tokens_nan", ["--mode", "training", "--tokens", "nan"]),
        ("tokens_inf", ["--mode", "training", "--tokens", "inf"]),
        ("input_rate_word", ["--input-rate", "fast"]), ("input_rate_zero", ["--input-rate", "0/s"]),
        ("input_rate_huge", ["--input-rate", "1e12/s"])]
    for name, extra in flags:
        case(F, "type", name, None, ["estimate", "resnet50", "--gpu", "a100"] + extra, r"", FLAG)
    for name, argv in [
            ("check_latency_unit", ["check", "resnet50", "--gpu", "a100", "--max-latency", "5parsecs"]),
            ("check_memory_negative", ["check", "resnet50", "--gpu", "a100", "--max-memory", "-1GiB"]),
            ("check_latency_nan", ["check", "resnet50", "--gpu", "a100", "--max-latency", "nanms"]),
            ("serve_rate_zero", ["serve", "llama2_7b", "--gpu", "h100", "--rate", "0/s", "--prompt-tokens", "100"]),
            ("serve_rate_negative", ["serve", "llama2_7b", "--gpu", "h100", "--rate", "-1/s", "--prompt-tokens", "100"]),
            ("serve_requests_huge", ["serve", "llama2_7b", "--gpu", "h100", "--rate", "1/s", "--prompt-tokens", "100", "--requests", "99999999"]),
            
            ("plan_tokens_zero", ["plan", "llama2_7b", "--tokens", "0", "--gpu", "h100"]),
            ("plan_max_devices_zero", ["plan", "llama2_7b", "--tokens", "1e9", "--gpu", "h100", "--max-devices", "0"]),
            ("scale_range_backwards", ["scale", "resnet50", "--gpu", "a100", "--devices", "8..4"]),
            ("compare_batch_list_bad", ["compare", "resnet50", "--hw", "a100,t4", "--batch", "1,,8"]),
            ("plan_interruptions_nan", ["plan", "llama3_8b", "--tokens", "1e10", "--gpu", "h100", "--pricing", "spot",
                                        "--discount", "10%", "--interruptions", "nan", "--restart", "1h",
                                        "--checkpoint-every", "1h"]),
            ("plan_life_zero", ["plan", "llama3_8b", "--tokens", "1e10", "--gpu", "h100", "--pricing", "owned",
                                "--capex", "1kUSD", "--life", "0"]),
            ("plan_capex_huge", ["plan", "llama3_8b", "--tokens", "1e10", "--gpu", "h100", "--pricing", "owned",
                                 "--capex", "1e400USD"]),
            ("plan_discount_negative", ["plan", "llama3_8b", "--tokens", "1e10", "--gpu", "h100", "--pricing",
                                        "reserved", "--discount", "-10%"]),
            ("roofline_label_negative", ["roofline", "resnet50", "--gpu", "a100", "--label", "-1"]),
            ("validate_min_within_negative", ["validate", "--min-within-2x", "-3"]),
            # Device counts of no machine (9.2e18 devices printed a run's cost and energy).
            ("devices_huge", ["estimate", "llama2_7b", "--gpu", "h100", "--mode", "training", "--tokens", "1e9",
                              "--devices", "9223372036854775807"]),
            ("layout_devices_huge", ["compare", "llama2_7b", "--hw", "h100", "--mode", "training", "--tp", "1000000",
                                     "--pp", "1000000"]),
            # --models that is not a folder: it blamed the first case's model ("X/resnet50.json").
            ("validate_models_dev_zero", ["validate", "--models", "/dev/zero"]),
            ("validate_models_file", ["validate", "--models", "README.md"]),
            ("calibrate_models_missing", ["calibrate", "data/validation/measured_h200.json", "--models", "no_such_folder"]),
            ("hw_list_type", ["hw", "list", "--type", "gpuu"]),
            ("hw_show_unknown", ["hw", "show", "z100"]),
            ("compare_prompt_nan", ["compare", "llama2_7b", "--hw", "h100", "--prompt-tokens", "nan"]),
            ("estimate_prompt_overflow", ["estimate", "llama2_7b", "--gpu", "h100", "--prompt-tokens", "4294967296", "--output-tokens", "4294967296", "--batch", "4294967296"])]:
        cls = "overflow" if "overflow" in name or "huge" in name else "type"
        case(F, cls, name, None, argv, r"", FLAG)
    # A prompt past the request limit is the flag's error (the draws were clamped at 1e12 and
    # then reported as not fitting the KV cache); one that fits the limit but not the cache
    # says so.
    for name, flag, extra in [("serve_prompt_huge", "--prompt-tokens", ["--prompt-tokens", "1e300"]),
                              ("serve_output_huge", "--output-tokens",
                               ["--prompt-tokens", "100", "--output-tokens", "200000000"]),
                              ("serve_prompt_uniform_huge", "--prompt-tokens", ["--prompt-tokens", "uniform:1..1e12"]),
                              ("serve_prompt_lognormal_huge", "--prompt-tokens",
                               ["--prompt-tokens", "lognormal:1e9,0.5"])]:
        case(F, "overflow", name, None, ["serve", "llama2_7b", "--gpu", "h100", "--rate", "1/s"] + extra,
             flag + r": at most 100,000,000 tokens a request", FLAG)
    case(F, "physics", "serve_prompt_past_cache", None,
         ["serve", "llama2_7b", "--gpu", "h100", "--rate", "1/s", "--prompt-tokens", "90000000"],
         r"does not fit in the KV cache", ("anyloc", None))


model_cases()
onnx_cases()
onnx_text_cases()
hf_cases()
hardware_cases()
runtime_cases()
budget_cases()
measurement_cases()
trace_cases()
mix_cases()
serving_cases()
zoo_and_flag_cases()


# --- Commands --------------------------------------------------------------------------------

def as_bytes(content):
    return content.encode("utf-8") if isinstance(content, str) else content


def write():
    if os.path.isdir(CORPUS):
        shutil.rmtree(CORPUS)
    for c in CASES:
        if c.committed:
            path = os.path.join(ROOT, c.rel_path())
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(as_bytes(c.content))
    return 0


def check():
    expected = {c.rel_path(): as_bytes(c.content) for c in CASES if c.committed}
    problems = []
    for directory, _, names in os.walk(CORPUS):
        for name in names:
            rel = os.path.relpath(os.path.join(directory, name), ROOT).replace(os.sep, "/")
            if rel not in expected:
                problems.append(f"{rel}: not written by corpus.py (remove it, or run corpus.py write)")
    for rel, data in expected.items():
        path = os.path.join(ROOT, rel)
        if not os.path.isfile(path):
            problems.append(f"{rel}: missing (run tests/hostile/corpus.py write)")
        else:
            with open(path, "rb") as f:
                if f.read() != data:
                    problems.append(f"{rel}: differs from what corpus.py writes (run corpus.py write)")
    for p in problems:
        print(p)
    print(f"{len(expected)} committed files; {len(problems)} problem(s)")
    return 1 if problems else 0


def location_regex(c, path):
    """The start of stderr that the case's location kind asks for."""
    where = c.where
    head = r"^capcalc: error: "
    if where == LINE:
        return head + re.escape(path) + r":\d+:\d+: "
    if where == PTR:
        return head + re.escape(path) + r":/"
    if where == FILE:
        return head + re.escape(path) + r": "
    if where == FLAG:
        return head + r"[^\n]*(--[a-z][a-z0-9-]*|\"[^\"]*\"|\(with [a-z_]+ = [0-9]+)"
    if isinstance(where, tuple) and where[0] == "ptrre":
        return head + re.escape(path) + ":(" + where[1] + ")"
    if isinstance(where, tuple) and where[0] == "literal":
        return head + re.escape(where[1].replace("{f}", path))
    if isinstance(where, tuple) and where[0] == "anyloc":
        return head + r"\S"
    return head + re.escape(where) + ":"


def run_case(c, cli, made, memory_limit):
    path = c.rel_path()
    if callable(c.content):
        path = os.path.join(made, f"{c.kind}_{c.name}.{EXT.get(c.kind, 'txt')}")
        c.content(made, path)
    args = [a.replace("{f}", path).replace("{made}", made) for a in c.args]

    def limit():
        if memory_limit:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))

    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "CLICOLOR_FORCE")}
    try:
        p = subprocess.run([cli] + args, cwd=ROOT, capture_output=True, timeout=TIMEOUT_S,
                           preexec_fn=limit, env=env)
    except subprocess.TimeoutExpired:
        return [f"timed out after {TIMEOUT_S} s"], "", ""
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    problems = []
    if p.returncode != 2:
        problems.append(f"exit code {p.returncode}, expected 2")
    if out:
        problems.append("stdout is not empty")
    if not re.fullmatch(r"[^\n]+\n", err):
        problems.append(f"stderr is not one line ({err.count(chr(10))} newlines)")
    if not re.search(location_regex(c, path), err):
        problems.append(f"stderr does not start with the location /{location_regex(c, path)}/")
    if c.pattern and not re.search(c.pattern, err):
        problems.append(f"stderr does not match /{c.pattern}/")
    for bad in ("internal error", "terminate called", "AddressSanitizer", "runtime error:", "json.exception"):
        if bad in err:
            problems.append(f"stderr holds '{bad}'")
    return problems, out, err


def run(cli, kind, memory_limit, verbose):
    cases = [c for c in CASES if kind is None or c.kind == kind]
    made = tempfile.mkdtemp(prefix="capcalc-hostile-")
    failures = 0
    opened = 0
    try:
        for c in cases:
            problems, out, err = run_case(c, cli, made, memory_limit)
            if c.known_open:
                if not problems:
                    problems = [f"passes now: remove it from KNOWN_OPEN ({c.known_open})"]
                else:
                    print(f"open {c.kind}/{c.name}: {c.known_open}")
                    opened += 1
                    continue
            status = "FAIL" if problems else "ok"
            if problems or verbose:
                print(f"{status} {c.kind}/{c.name} [{c.cls}]: capcalc {' '.join(c.args)}")
                print("  stderr: " + err.rstrip("\n").replace("\n", "\n          "))
                if out:
                    print("  stdout: " + out[:300].rstrip("\n").replace("\n", "\n          "))
                for problem in problems:
                    print("  " + problem)
            failures += bool(problems)
    finally:
        shutil.rmtree(made, ignore_errors=True)
    print(f"{len(cases) - failures - opened} of {len(cases)} hostile cases pass, {opened} known open"
          + (f" (kind {kind})" if kind else ""))
    return 1 if failures else 0


def stats():
    by_kind, by_class = {}, {}
    for c in CASES:
        by_kind.setdefault(c.kind, [0, 0])[0 if c.committed else 1] += 1
        by_class[c.cls] = by_class.get(c.cls, 0) + 1
    print("kind: committed files + made at run time or flags only")
    for k in KINDS:
        print(f"  {k:13} {by_kind.get(k, [0, 0])[0]:4} + {by_kind.get(k, [0, 0])[1]}")
    print("class: cases")
    for k in CLASSES:
        print(f"  {k:13} {by_class.get(k, 0):4}")
    print(f"{len(CASES)} cases, {sum(c.committed for c in CASES)} committed files")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["write", "check", "run", "stats"])
    parser.add_argument("--cli")
    parser.add_argument("--kind", choices=KINDS)
    parser.add_argument("--no-memory-limit", action="store_true",
                        help="skip the 4 GiB address-space limit (AddressSanitizer reserves more)")
    parser.add_argument("-v", "--verbose", action="store_true")
    a = parser.parse_args()
    if a.command == "write":
        return write()
    if a.command == "check":
        return check()
    if a.command == "stats":
        return stats()
    if not a.cli:
        parser.error("run needs --cli")
    return run(os.path.abspath(a.cli), a.kind, not a.no_memory_limit, a.verbose)


if __name__ == "__main__":
    sys.exit(main())
