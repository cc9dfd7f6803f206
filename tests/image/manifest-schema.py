#!/usr/bin/env python3
"""manifest-schema.py - check manifests against runtime/image/manifest.schema.json
(python3-jsonschema, draft 2020-12), for tests/image/manifest-schema.sh.

    manifest-schema.py probe
        exit 0 when jsonschema with draft 2020-12 is importable (prints its version)
    manifest-schema.py SCHEMA MODE [--key KEY] FILE...
        MODE valid:   every FILE is valid
             strict:  valid, and holds no key the schema does not name (what
                      this gpuckpt writes: the schema allows unknown keys,
                      because the reader ignores them, but a writer that adds
                      one without the spec is drift)
             invalid: every FILE is refused
        --key KEY: check FILE's member KEY (gpuckpt inspect --json's "manifest")
Prints one line per FILE that is not as expected, with the schema's reasons;
exit 0 when every FILE is as expected, 1 when not, 2 on a usage error.
"""
import copy
import json
import sys


def strict_of(schema):
    """The schema with unevaluatedProperties: false on every object it
    defines whole (each has "type": "object"; the pieces they $ref have none)."""
    out = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "object":
                node["unevaluatedProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(out)
    return out


def main(argv):
    try:
        import jsonschema
        from jsonschema import Draft202012Validator
    except ImportError as e:
        if argv[1:2] == ["probe"]:
            print("python3-jsonschema with draft 2020-12 is missing: %s" % e)
            return 1
        raise
    if argv[1:2] == ["probe"]:
        try:
            from importlib.metadata import version
            print(version("jsonschema"))
        except Exception:
            print("jsonschema")
        return 0
    if len(argv) < 4 or argv[2] not in ("valid", "strict", "invalid"):
        print(__doc__, file=sys.stderr)
        return 2
    schema_path, mode, files = argv[1], argv[2], argv[3:]
    key = None
    if files[:1] == ["--key"]:
        key, files = files[1], files[2:]
    with open(schema_path) as f:
        schema = json.load(f)
    Draft202012Validator.check_schema(schema)
    if mode == "strict":
        schema = strict_of(schema)
    validator = Draft202012Validator(schema)
    bad = 0
    for path in files:
        try:
            with open(path) as f:
                doc = json.load(f)
            if key is not None:
                doc = doc[key]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print("%s: cannot read it: %s" % (path, e))
            bad += 1
            continue
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        if mode == "invalid":
            if not errors:
                print("%s: the schema accepts it" % path)
                bad += 1
            continue
        if errors:
            bad += 1
            for e in errors[:5]:
                where = "/".join(str(p) for p in e.absolute_path) or "(top)"
                print("%s: %s: %s" % (path, where, e.message[:300]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
