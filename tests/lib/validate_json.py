"""Validate dolsot --json output against the shipped schema.

usage: /usr/bin/python3 tests/lib/validate_json.py SCHEMA < OUTPUT

OUTPUT must be exactly one JSON object and a newline; exit 0 when it is
valid, 1 with the validator's reasons on stderr.  Run by tests/check_json.c
with Debian's python3-jsonschema.
"""
import json
import sys

import jsonschema


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    text = sys.stdin.read()
    if not text.endswith("\n") or text.count("\n") != 1:
        print("not one line ending in a newline", file=sys.stderr)
        return 1
    doc = json.loads(text)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    for e in errors:
        print(f"{list(e.path)}: {e.message[:300]}", file=sys.stderr)
    return 1 if errors else 0


sys.exit(main())
