"""Validates a JSON document against its JSON Schema: ctest's schema.* tests.

Usage: validate_schema.py DOCUMENT SCHEMA[#/$defs/NAME]. Each violation prints as
DOCUMENT:/json/pointer: message and the exit status is 1. A #/$defs/NAME suffix applies that
definition of the schema as well (data/validation's stricter rules on the measurements schema).
Prints "SKIPPED: ..." (the tests' SKIP_REGULAR_EXPRESSION) and exits 0 where the jsonschema
module is not installed (Debian: python3-jsonschema); under CI (CI=true, as .ci/run sets it),
which installs it, that is a failure instead.
"""
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    jsonschema = None

SKIP_MESSAGE = "SKIPPED: the Python module jsonschema is not installed (apt install python3-jsonschema)"


def skip():
    """Exit status for a missing jsonschema: skipped (0) on a desk, failed (1) under CI."""
    if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
        print(f"{sys.executable}: the Python module jsonschema is not installed, and CI must "
              "validate the schemas (.ci/run installs python3-jsonschema)")
        return 1
    print(SKIP_MESSAGE)
    return 0


def load_schema(spec):
    """Reads SCHEMA or SCHEMA#/$defs/NAME; the latter adds {"$ref": "#/$defs/NAME"} to the root."""
    path, _, fragment = spec.partition("#")
    with open(path, encoding="utf-8") as f:
        schema = json.load(f)
    if fragment:
        name = fragment.removeprefix("/$defs/")
        if name == fragment or name not in schema.get("$defs", {}):
            raise SystemExit(f"{spec}: no definition {fragment}")
        schema["allOf"] = schema.get("allOf", []) + [{"$ref": "#/$defs/" + name}]
    return schema


def violations(document, schema):
    """The schema's violations by the document as (JSON pointer, message), in document order."""
    # The draft the schema names in "$schema" (2020-12 for capcalc's).
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    errors = sorted(validator_class(schema).iter_errors(document),
                    key=lambda e: [str(p) for p in e.absolute_path])
    return [("".join(f"/{part}" for part in e.absolute_path) or "/", e.message) for e in errors]


def main(document_path, schema_spec):
    if jsonschema is None:
        return skip()
    with open(document_path, encoding="utf-8") as f:
        document = json.load(f)
    found = violations(document, load_schema(schema_spec))
    for pointer, message in found:
        print(f"{document_path}:{pointer}: {message}")
    print(f"{document_path}: {len(found)} schema violation(s) against {schema_spec}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
