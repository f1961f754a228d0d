"""Validates every JSON file under data/ and tests/ against its schema: ctest's schema.data_files.

Usage: check_data_schemas.py [ROOT] (default: the repository this script is in).

Each *.json and *.jsonl file under ROOT/data and ROOT/tests must match one rule of RULES below
(the first that matches wins; * does not cross a /). A file that matches none fails the test, so
a new file or format cannot be missed silently: give it a schema, or say why it has none.
  valid:   the file satisfies the schema (NAME#/$defs/DEF: and that definition too).
  invalid: a deliberately bad input whose defect the schema catches: it must have a violation.
  exempt:  no capcalc schema applies; the reason says why (another project's format, input
           that is not JSON, or a bad input whose defect is beyond what a schema expresses).
Schemas in data/schema are checked against their own metaschema.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validate_schema  # noqa: E402  (beside this script)

HF = "a Hugging Face config.json (transformers' format, read by capcalc's HF importer): no capcalc schema"
SEMANTIC = "deliberately bad input, valid by the schema: the defect is "


def valid(schema):
    return ("valid", schema)


def invalid(schema):
    return ("invalid", schema)


def exempt(reason):
    return ("exempt", reason)


def hostile(schema):
    """A deliberately bad input of the corpus: not JSON, or a violation of the schema, or a
    defect BLIND (below) names as beyond what JSON Schema expresses."""
    return ("hostile", schema)


# Defects of the hostile corpus that JSON Schema cannot see, by file (tests/hostile/json) or by
# the corpus case's class (tests/hostile/corpus, from corpus.py). Everything else must fail
# its schema: a hostile file that its schema accepts is a gap in the schema.
DUPLICATE = "a duplicate key (a JSON Schema validator sees only the last one)"
CROSS = "a rule between keys or files that the schema leaves to the reader"
REFERENCE = "a name of something elsewhere (a device, runtime, block, model file or dimension)"
BLIND_FILES = {
    "tests/hostile/json/budget_dup_limit.json": DUPLICATE,
    "tests/hostile/json/dup_attribute.json": DUPLICATE,
    "tests/hostile/json/dup_dim.json": DUPLICATE,
    "tests/hostile/json/dup_escaped.json": DUPLICATE,
    "tests/hostile/json/dup_layers.json": DUPLICATE,
    "tests/hostile/json/hardware_dup.json": DUPLICATE,
    "tests/hostile/json/measurements_dup.json": DUPLICATE,
    "tests/hostile/json/budget_epochs_alone.json": CROSS,
    "tests/hostile/json/budget_tokens_and_size.json": CROSS,
    "tests/hostile/json/budget_tokens_no_seq.json": CROSS,
    "tests/hostile/json/budget_train_time_no_run.json": CROSS,
    "tests/hostile/json/budget_ttft_no_prompt.json": CROSS,
    "tests/hostile/json/budget_missing_model.json": REFERENCE,
    "tests/hostile/json/budget_model_directory.json": REFERENCE,
    "tests/hostile/json/budget_set_unknown_dim.json": REFERENCE,
    "tests/hostile/json/hardware_alias_builtin.json": REFERENCE + ": a built-in device's name",
    "tests/hostile/json/hardware_id_alias_builtin.json": REFERENCE + ": a built-in device's name",
    "tests/hostile/json/hardware_alias_replaces.json": "valid: the entry replaces a device on purpose",
    "tests/hostile/json/meas_unknown_device.json": REFERENCE,
    "tests/hostile/json/meas_unknown_device_3.json": REFERENCE,
    "tests/hostile/json/meas_unknown_runtime.json": REFERENCE,
    "tests/hostile/json/meas_runtime_other_profile.json": CROSS,
    "tests/hostile/json/first_index_overflow.json": "a sum past 64 bits",
    "tests/hostile/corpus/model/attr_*.json":
        "an operator attribute's value (the schema leaves attributes to docs/model-format.md)",
    "tests/hostile/corpus/model/repeat_zero.json": "an integer-or-expression the schema does not bound",
    "tests/hostile/corpus/model/shape_empty_dim.json": "an integer-or-expression the schema does not bound",
    "tests/hostile/corpus/budget/limit_*.json": "a quantity's number or unit (the schema checks a string)",
    "tests/hostile/corpus/budget/input_rate_huge.json": "a rate's number (the schema checks a string)",
    "tests/hostile/corpus/budget/input_rate_word.json": "a rate's unit (the schema checks a string)",
    "tests/hostile/corpus/budget/memory_limit_bad.json": "a quantity's unit (the schema checks a string)",
    "tests/hostile/corpus/hardware/date_bad.json": "a day its month does not have (2026-02-30)",
    "tests/hostile/corpus/measurements/quote_missing.json": CROSS,
}
BLIND_CLASSES = {
    "duplicate": DUPLICATE, "depth": "nesting past capcalc's limit", "expansion": "expansion past "
    "capcalc's limits", "overflow": "counts past 64 bits", "reference": REFERENCE,
    "invalid-graph": "shapes that do not fit together", "physics": "figures the reader bounds",
    "size": "a size limit", "not-a-file": "not a file", "semantic": CROSS,
}


def corpus_classes(root):
    """tests/hostile/corpus/... path -> the class corpus.py gives its case."""
    sys.path.insert(0, os.path.join(root, "tests", "hostile"))
    import corpus  # noqa: E402  (tests/hostile/corpus.py)
    return {c.rel_path(): c.cls for c in corpus.CASES if c.committed}


RULES = [
    # data/: the shipped tables, the model zoo and the validation sets.
    ("data/hardware.json", valid("hardware")),
    ("data/runtimes.json", valid("runtimes")),
    ("data/ranges.json", valid("ranges")),
    ("data/schema/*.schema.json", ("metaschema", None)),
    ("data/zoo.json", valid("zoo")),
    ("data/models/*_hf.json", exempt(HF)),
    ("data/models/*.json", valid("model")),
    ("data/validation/serving.json", valid("serving-validation")),
    ("data/validation/serving_pending.json", valid("serving-validation")),
    ("data/validation/*.json", valid("measurements#/$defs/validation_set")),
    ("data/validation/device/*.jsonl",
     exempt("raw logs of bench/device/measure.py (one JSON record per line), quoted as sources")),
    # tests/cli: inputs of the CLI tests.
    ("tests/cli/serve_validation_small.json", valid("serving-validation")),
    ("tests/cli/serve_mix.json", valid("serve-mix")),
    ("tests/cli/serve_mix_bad_key.json", invalid("serve-mix")),
    ("tests/cli/budget_pass.json", valid("budget")),
    ("tests/cli/budget_fail.json", valid("budget")),
    ("tests/cli/budget_runtime.json", valid("budget")),
    ("tests/cli/budget_fp8_recipe.json", valid("budget")),
    ("tests/cli/budget_input_rate.json", valid("budget")),
    ("tests/cli/budget_bad_key.json", invalid("budget")),
    ("tests/cli/budget_bare_memory.json", invalid("budget")),
    ("tests/cli/budget_tokens.json", valid("budget")),
    ("tests/cli/budget_workload.json", valid("budget")),
    ("tests/cli/budget_mtp.json", valid("budget")),
    ("tests/cli/budget_recompute.json", valid("budget")),
    # Valid by the schema; the reader rejects MTP modules outside training (a rule between keys).
    ("tests/cli/budget_mtp_inference.json", valid("budget")),
    ("tests/cli/budget_bare_rate.json",
     exempt(SEMANTIC + "a bare rate on a language model, ambiguous by its seq")),
    ("tests/cli/budget_bad_device.json", exempt(SEMANTIC + "an unknown device id")),
    ("tests/cli/budget_bad_runtime.json", exempt(SEMANTIC + "an unknown runtime id")),
    ("tests/cli/my_hardware.json", valid("hardware")),
    ("tests/cli/bad_hardware.json", invalid("hardware")),
    ("tests/cli/records.json", valid("measurements")),
    ("tests/cli/records_batch1.json", valid("measurements")),
    ("tests/cli/records_zoo_name.json", valid("measurements")),
    ("tests/cli/records_runtime.json", valid("measurements")),
    ("tests/cli/records_bad_device.json", exempt(SEMANTIC + "an unknown device id")),
    ("tests/cli/bad_measurements.json", invalid("measurements")),
    ("tests/cli/bad_measurements_tp.json",
     exempt(SEMANTIC + "6 devices that tensor_parallel 4 does not divide")),
    ("tests/cli/unknown_op.json", invalid("model")),
    ("tests/cli/bad_kernel.json",
     exempt(SEMANTIC + "an operator attribute's value (the schema leaves attributes to docs/model-format.md)")),
    ("tests/cli/wrong_type.json",
     exempt(SEMANTIC + "an operator attribute's type (the schema leaves attributes to docs/model-format.md)")),
    ("tests/cli/unknown_attribute.json",
     exempt(SEMANTIC + "a misspelt operator attribute (the schema leaves attributes to docs/model-format.md)")),
    ("tests/cli/shape_mismatch.json", exempt(SEMANTIC + "shapes that do not broadcast")),
    ("tests/cli/overflow.json", exempt(SEMANTIC + "counts past 64 bits")),
    ("tests/cli/binary.json", exempt("deliberately not JSON (binary bytes)")),
    ("tests/cli/syntax_error.json", exempt("deliberately not JSON (a syntax error)")),
    # tests/hostile: inputs built to exhaust time or memory; valid by their schemas.
    ("tests/hostile/budget_*.json", valid("budget")),
    ("tests/hostile/hf_layers_huge.json", exempt(HF)),
    ("tests/cli/serve_trace.jsonl",
     exempt("a serve --trace file: JSON lines, one request each; its format is in docs/serving.md "
            "and its reader checks every line (tests/cli_serve_tests.cmake)")),
    ("tests/cli/serve_bad_trace.jsonl",
     exempt("a serve --trace file with a deliberate error on one line, for the reader's located "
            "error")),
    ("tests/hostile/*.json", valid("model")),
    # The bad-input corpus of issue 21: each file must be rejected by its schema too, unless its
    # defect is one JSON Schema cannot see (hostile(), below, says which).
    ("tests/hostile/json/budget_*.json", hostile("budget")),
    ("tests/hostile/json/hardware_*.json", hostile("hardware")),
    ("tests/hostile/json/meas_*.json", hostile("measurements")),
    ("tests/hostile/json/measurements_*.json", hostile("measurements")),
    ("tests/hostile/json/runtime_*.json", hostile("runtimes")),
    ("tests/hostile/json/hf_*.json", exempt(HF)),
    ("tests/hostile/json/*.json", hostile("model")),
    ("tests/hostile/corpus/model/*.json", hostile("model")),
    ("tests/hostile/corpus/hardware/*.json", hostile("hardware")),
    ("tests/hostile/corpus/budget/*.json", hostile("budget")),
    ("tests/hostile/corpus/measurements/*.json", hostile("measurements")),
    ("tests/hostile/corpus/runtime/*.json", hostile("runtimes")),
    ("tests/hostile/corpus/hf/*.json", exempt(HF)),
    ("tests/hostile/corpus/mix/*.json", hostile("serve-mix")),
    ("tests/hostile/corpus/serving/*.json", hostile("serving-validation")),
    ("tests/hostile/corpus/trace/*.jsonl",
     exempt("serve --trace files with one deliberate error each (tests/hostile/corpus.py); a trace "
            "is JSON lines, whose format docs/serving.md states and no capcalc schema covers")),
    # tests/exports: how the ONNX test files were made.
    ("tests/exports/exports.json",
     exempt("provenance notes of the ONNX files beside it, read by no capcalc command")),
    ("tests/exports/torch113/exports.json",
     exempt("provenance and reference counts of the ONNX files beside it, written by "
            "tools/export_torch_onnx.py and read only by tests/onnx_real_exports_test.cpp")),
]


def rule_regex(pattern):
    return re.compile("".join("[^/]*" if c == "*" else re.escape(c) for c in pattern) + r"\Z")


COMPILED = [(rule_regex(pattern), action) for pattern, action in RULES]


def files_under(root):
    for top in ("data", "tests"):
        for directory, subdirs, names in os.walk(os.path.join(root, top)):
            subdirs.sort()
            for name in sorted(names):
                if name.endswith((".json", ".jsonl")):
                    path = os.path.join(directory, name)
                    yield os.path.relpath(path, root).replace(os.sep, "/")


def check(root, relative, action):
    """Returns a list of problems (empty when the file meets its rule)."""
    kind, what = action
    path = os.path.join(root, relative)
    if kind == "exempt":
        return []
    if kind == "hostile":
        return check_hostile(root, relative, what)
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    if kind == "metaschema":
        validator_class = validate_schema.jsonschema.validators.validator_for(document)
        try:
            validator_class.check_schema(document)
        except validate_schema.jsonschema.exceptions.SchemaError as e:
            return [f"{relative}: not a valid schema: {e.message}"]
        return []
    name, _, fragment = what.partition("#")
    spec = os.path.join(root, "data", "schema", name + ".schema.json") + ("#" + fragment if fragment else "")
    found = validate_schema.violations(document, validate_schema.load_schema(spec))
    if kind == "valid":
        return [f"{relative}:{pointer}: {message}" for pointer, message in found]
    if not found:
        return [f"{relative}: a deliberately bad input that {name}.schema.json accepts; "
                "exempt it with the reason, or tighten the schema"]
    return []


CLASSES = {}


def reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def check_hostile(root, relative, name):
    try:
        with open(os.path.join(root, relative), encoding="utf-8") as f:
            document = json.load(f, parse_constant=reject_constant)
    except (ValueError, UnicodeDecodeError):
        return []  # Not JSON: the defect is the syntax.
    if not CLASSES:
        CLASSES.update(corpus_classes(root))
    spec = os.path.join(root, "data", "schema", name + ".schema.json")
    if validate_schema.violations(document, validate_schema.load_schema(spec)):
        return []
    if any(rule_regex(pattern).match(relative) for pattern in BLIND_FILES) or \
            BLIND_CLASSES.get(CLASSES.get(relative)):
        return []
    return [f"{relative}: a hostile input that {name}.schema.json accepts; tighten the schema, or "
            "name the defect JSON Schema cannot see (BLIND_FILES, or its class in corpus.py)"]


def main(root):
    unmapped, problems, counts, checks = [], [], {}, []
    for relative in files_under(root):
        action = next((a for regex, a in COMPILED if regex.match(relative)), None)
        if action is None:
            unmapped.append(relative)
        else:
            checks.append((relative, action))
    for relative in unmapped:
        print(f"{relative}: no rule gives this file a schema; add one to RULES in "
              f"tests/check_data_schemas.py (a schema in data/schema, or exempt with a reason)")
    if unmapped:
        return 1
    if validate_schema.jsonschema is None:
        return validate_schema.skip()
    for relative, action in checks:
        found = check(root, relative, action)
        problems += found
        counts[action[0]] = counts.get(action[0], 0) + 1
        detail = f" ({action[1]})" if action[1] else ""
        print(f"{'FAIL' if found else 'ok':4} {action[0]:10} {relative}{detail}")
    for problem in problems:
        print(problem)
    print(f"{len(checks)} files: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
          + f"; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    default_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else default_root))
