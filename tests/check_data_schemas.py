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


RULES = [
    # data/: the shipped tables, the model zoo and the validation sets.
    ("data/hardware.json", valid("hardware")),
    ("data/runtimes.json", valid("runtimes")),
    ("data/ranges.json", valid("ranges")),
    ("data/schema/*.schema.json", ("metaschema", None)),
    ("data/zoo.json", valid("zoo")),
    ("data/models/*_hf.json", exempt(HF)),
    ("data/models/*.json", valid("model")),
    ("data/validation/*.json", valid("measurements#/$defs/validation_set")),
    ("data/validation/device/*.jsonl",
     exempt("raw logs of bench/device/measure.py (one JSON record per line), quoted as sources")),
    # tests/cli: inputs of the CLI tests.
    ("tests/cli/budget_pass.json", valid("budget")),
    ("tests/cli/budget_fail.json", valid("budget")),
    ("tests/cli/budget_runtime.json", valid("budget")),
    ("tests/cli/budget_bad_key.json", invalid("budget")),
    ("tests/cli/budget_bare_memory.json", invalid("budget")),
    ("tests/cli/budget_bad_device.json", exempt(SEMANTIC + "an unknown device id")),
    ("tests/cli/budget_bad_runtime.json", exempt(SEMANTIC + "an unknown runtime id")),
    ("tests/cli/my_hardware.json", valid("hardware")),
    ("tests/cli/bad_hardware.json", invalid("hardware")),
    ("tests/cli/records.json", valid("measurements")),
    ("tests/cli/records_batch1.json", valid("measurements")),
    ("tests/cli/records_bad_device.json", exempt(SEMANTIC + "an unknown device id")),
    ("tests/cli/bad_measurements.json", invalid("measurements")),
    ("tests/cli/bad_measurements_tp.json",
     exempt(SEMANTIC + "6 devices that tensor_parallel 4 does not divide")),
    ("tests/cli/unknown_op.json", invalid("model")),
    ("tests/cli/bad_kernel.json",
     exempt(SEMANTIC + "an operator attribute's value (the schema leaves attributes to data/README.md)")),
    ("tests/cli/wrong_type.json",
     exempt(SEMANTIC + "an operator attribute's type (the schema leaves attributes to data/README.md)")),
    ("tests/cli/unknown_attribute.json",
     exempt(SEMANTIC + "a misspelt operator attribute (the schema leaves attributes to data/README.md)")),
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
    ("tests/hostile/json/*.json",
     exempt("the bad-input corpus of issue 21 (tests/cli_hostile_tests.cmake): each file is wrong "
            "in one way its CLI test names; many in ways JSON Schema cannot see (duplicate keys, "
            "NUL bytes, ids that name another device, out-of-range figures)")),
    # tests/exports: how the ONNX test files were made.
    ("tests/exports/exports.json",
     exempt("provenance notes of the ONNX files beside it, read by no capcalc command")),
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
