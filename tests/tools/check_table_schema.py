#!/usr/bin/env python3
"""Every table and per-rank file collsched writes validates against its own schema (schema/).

Usage: check_table_schema.py COLLSCHED SOURCE_DIR

Validates (with python3-jsonschema, draft 2020-12) every table committed to the repository
(tests/golden, tests/data, schedules/) and the table that `collsched compile` writes for every
schedule of the library (schedules/**/*.sched, default parameters), and against
schema/collsched.ranks.schema.json the committed per-rank files and the per-rank view of every
library table that has one (`convert --format ranks`); then checks that the table schema
still refuses what it must (an unknown collective, a malformed message), so the check can fail.
Prints one line per table that does not validate and exits 1 if there is any.
"""
import json
import pathlib
import subprocess
import sys
import tempfile

import jsonschema


def documents(root: pathlib.Path, kind: str):
    for sub in ("tests/golden", "tests/data", "schedules"):
        for path in sorted((root / sub).rglob("*.json")):
            try:
                doc = json.loads(path.read_text())
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(doc, dict) and str(doc.get("format", "")).startswith(f"collsched.{kind}/"):
                yield path, doc


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    collsched, root = sys.argv[1], pathlib.Path(sys.argv[2])
    def load(kind):
        return jsonschema.Draft202012Validator(json.loads((root / f"schema/collsched.{kind}.schema.json").read_text()))

    validator, ranks_validator = load("table"), load("ranks")
    checked, bad = 0, []

    def check(name, doc, v=validator):
        nonlocal checked
        checked += 1
        errors = sorted(v.iter_errors(doc), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            bad.append(f"{name}: at {'/'.join(map(str, e.path)) or '(top)'}: {e.message[:160]}")

    for path, doc in documents(root, "table"):
        check(path.relative_to(root), doc)
    for path, doc in documents(root, "ranks"):
        check(path.relative_to(root), doc, ranks_validator)
    committed = checked
    with tempfile.TemporaryDirectory() as out:
        for sched in sorted((root / "schedules").rglob("*.sched")):
            target = pathlib.Path(out) / (sched.stem + ".json")
            run = subprocess.run([collsched, "compile", str(sched), "-o", str(target)], capture_output=True, text=True)
            if run.returncode != 0:
                bad.append(f"{sched.relative_to(root)}: collsched compile exited {run.returncode}: {run.stderr.strip()[:160]}")
                continue
            check(f"{sched.relative_to(root)} (compiled)", json.loads(target.read_text()))
            ranks = target.with_suffix(".ranks.json")
            run = subprocess.run([collsched, "convert", str(target), "--format", "ranks", "-o", str(ranks)],
                                 capture_output=True, text=True)
            if run.returncode == 0:
                check(f"{sched.relative_to(root)} (per-rank view)", json.loads(ranks.read_text()), ranks_validator)
            elif run.returncode != 2:  # 2: a table the per-rank view cannot express (docs/exports.md)
                bad.append(f"{sched.relative_to(root)}: convert --format ranks exited {run.returncode}")

    # the schema must still refuse: otherwise this check could not fail
    probe = {"format": "collsched.table/1", "topology": "ring:4", "collective": "allreduce",
             "transfers": [{"step": 1, "from": "0", "to": "1", "msg": "a({0,1})"}]}
    for field, value in (("collective", "alreduce"), ("msg", "a({0,,1})"), ("msg", "a({})")):
        doc = json.loads(json.dumps(probe))
        (doc["transfers"][0] if field == "msg" else doc)[field] = value
        if validator.is_valid(doc):
            bad.append(f"the schema accepts {field} = {value!r}")
    if not validator.is_valid(probe):
        bad.append("the schema refuses the probe table (allreduce with a partial)")

    for line in bad:
        print(line)
    failed = sum(not line.startswith("the schema") for line in bad)
    print(f"{checked} documents ({committed} committed, {checked - committed} from the library); "
          f"{len(bad) - failed} of 4 schema probes wrong")
    print(f"schema: {checked - failed} passed, {failed} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
