"""Validates a JSON document against its JSON Schema: ctest's schema.* tests.

Usage: validate_schema.py DOCUMENT SCHEMA. Each violation prints as DOCUMENT:/json/pointer: message
and the exit status is 1. Prints "SKIPPED: ..." (the tests' SKIP_REGULAR_EXPRESSION) and exits 0
where the jsonschema module is not installed (Debian: python3-jsonschema).
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("SKIPPED: the Python module jsonschema is not installed (apt install python3-jsonschema)")
    sys.exit(0)

document_path, schema_path = sys.argv[1], sys.argv[2]
with open(document_path, encoding="utf-8") as f:
    document = json.load(f)
with open(schema_path, encoding="utf-8") as f:
    schema = json.load(f)

# The draft the schema names in "$schema" (2020-12 for capcalc's).
validator_class = jsonschema.validators.validator_for(schema)
validator_class.check_schema(schema)
errors = sorted(validator_class(schema).iter_errors(document), key=lambda e: list(e.absolute_path))
for error in errors:
    pointer = "".join(f"/{part}" for part in error.absolute_path)
    print(f"{document_path}:{pointer or '/'}: {error.message}")
print(f"{document_path}: {len(errors)} schema violation(s) against {schema_path}")
sys.exit(1 if errors else 0)
