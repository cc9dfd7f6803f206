#!/usr/bin/env python3
"""manifest-schema.py - check manifests against runtime/image/manifest.schema.json
(python3-jsonschema, draft 2020-12), for tests/image/manifest-schema.sh.

    manifest-schema.py probe
        exit 0 when jsonschema with draft 2020-12 is importable (prints its version)
    manifest-schema.py SCHEMA differential CHECKPOINT GPUCKPT SEED COUNT
        Manifests each CHECKPOINT's with one field changed (removed, or set to
        a value of another type, range or shape: every such change of the
        first item of each array, or COUNT of them drawn with SEED), judged by the
        schema and by `GPUCKPT inspect` (the reader) on a copy of the folder:
        whatever the schema refuses, the reader refuses; whatever the reader
        refuses with a message about one field alone (type, form, range,
        presence, version), the schema refuses. Prints each disagreement.
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
import re
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


# The reader's messages about one field alone: what the schema must say too.
# (Others relate fields to each other or to the folder: FORMAT.md, "Checks
# beyond the schema".)
LOCAL_MESSAGES = ("missing field", "must be", "must not be negative", "needs format",
                  "need format", "is not allowed", "is not supported", "not a gpuckpt manifest",
                  "is empty", "is too long", "is 0: a part", "contains a NUL", "is out of range",
                  "is not a multiple of")
# What each field is set to, by the kind of its value in the checkpoint.
INTS = [-1, 0, 1, 4095, 4097, 2**31, 2**32, 2**63 - 1, 2**63, 1.5, "1", None]
HEXES = ["0x", "0x" + "f" * 16, "0x" + "f" * 17, "0xg", "1f", "0X1F", "0x1\u0000", 5]
HEX16 = ["f" * 15, "f" * 17, "F" * 16, "g" * 16, "f" * 15 + "\u0000", 5]
STRINGS = ["", "x", ".", "..", "a/b", "a..b", "x" * 63, "x" * 64, "x" * 300, "manifest.json",
           "manifest.sig", "9.0", "99.99", "100.0", "9.", "MPI", "mpi", "2026-11-22T10:00:00Z",
           "2026-11-22 10:00:00", "a\u0000", 5]
CONTAINERS = [[], {}, "x", [1], None]


def values_for(v):
    if isinstance(v, bool) or v is None:
        return [0, "x"]
    if isinstance(v, (int, float)):
        return INTS
    if isinstance(v, str):
        if v[:2] in ("0x", "0X"):
            return HEXES
        if len(v) == 16 and all(c in "0123456789abcdefABCDEF" for c in v):
            return HEX16
        return STRINGS
    return CONTAINERS


def differential(validator, src, tool, seed, count):
    import os
    import random
    import shutil
    import subprocess
    import tempfile

    with open(os.path.join(src, "manifest.json")) as f:
        base = json.load(f)

    def paths(o, p=()):
        if p:
            yield p
        if isinstance(o, dict):
            for k, v in o.items():
                yield from paths(v, p + (k,))
        elif isinstance(o, list):
            for i, v in enumerate(o[:1]):
                yield from paths(v, p + (i,))

    cases = []
    for p in paths(base):
        o = base
        for k in p[:-1]:
            o = o[k]
        if isinstance(o, dict):
            cases.append((p, "removed", None))
        for v in values_for(o[p[-1]]):
            cases.append((p, "set to %r" % (v,), v))
    for v in (1, 2, 3, 4):
        cases.append((("version",), "set to %r" % v, v))
    rnd = random.Random(seed)
    if count < len(cases):
        cases = rnd.sample(cases, count)
    bad = 0
    work = tempfile.mkdtemp(prefix="gk-differential.")
    try:
        for p, what, value in cases:
            d = copy.deepcopy(base)
            o = d
            for k in p[:-1]:
                o = o[k]
            if what == "removed":
                del o[p[-1]]
            else:
                o[p[-1]] = value
            ck = os.path.join(work, "ckpt.000001")
            shutil.rmtree(ck, ignore_errors=True)
            # The data files linked, not copied: the same owner and mode.
            shutil.copytree(src, ck, copy_function=os.link)
            os.unlink(os.path.join(ck, "manifest.json"))
            with open(os.path.join(ck, "manifest.json"), "w") as f:
                json.dump(d, f)
            r = subprocess.run([tool, "inspect", ck], capture_output=True, text=True)
            reader_ok = r.returncode == 0
            schema_ok = validator.is_valid(d)
            field = "/".join(str(k) for k in p)
            local = any(m in r.stderr for m in LOCAL_MESSAGES)
            # A message about another field than the one changed (a device's
            # peer_access naming the ordinal it was changed to) relates two
            # fields; so does set.member's range (to set.members - 1).
            named = re.search(r"field '([^']*)'", r.stderr)
            if named and not named.group(1).replace("[", ".").replace("]", "").replace(
                    ".", "/").startswith(field):
                local = False
            if field == "set/member":
                local = False
            if (not schema_ok and reader_ok) or (schema_ok and not reader_ok and local):
                bad += 1
                print("version %s, %s %s: schema %s, reader %s%s" % (
                    d.get("version"), field, what, "accepts" if schema_ok else "refuses",
                    "accepts" if reader_ok else "refuses", ": " + r.stderr.strip()[-200:]
                    if r.stderr else ""))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


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
    if len(argv) == 7 and argv[2] == "differential":
        with open(argv[1]) as f:
            schema = json.load(f)
        return differential(Draft202012Validator(schema), argv[3], argv[4], int(argv[5]),
                            int(argv[6]))
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
