#!/usr/bin/env python3
"""Runs every ```sh block of a guide (docs/gpu-guide.md) in order, in an empty directory, with
collsched on the PATH and C set to the source tree. Every command must exit 0, or the code a
trailing `# exit N` names; heredoc bodies are passed through untouched. Exit 0 when every command
behaves, 1 naming the first that does not (its output shown), 2 on usage errors.

Usage: run_guide.py GUIDE.md COLLSCHED_BINARY SOURCE_DIR [--link NAME[=PATH]]... [--skip-block K]...
                    [--skip-matching TEXT]...

--link NAME puts a symbolic link to SOURCE_DIR/NAME (or to PATH) into the directory (README.md
names shipped files as `schedules/...` and the build as `build/...`); --skip-block K leaves out the K-th ```sh block (1-based: the README's
set-up block, which installs and builds, is run by CI itself); --skip-matching TEXT leaves out
every block that contains TEXT (the Python block where the module is not built).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

EXIT = re.compile(r"^(?P<cmd>.*?)\s+#\s*exit (?P<code>\d)\s*$")
HEREDOC = re.compile(r"<<-?\s*'?(?P<tag>[A-Za-z_]+)'?")


def blocks(text, lang="sh"):
    """The ```LANG blocks (sh; tests/python/test_guide.py reads docs/python.md's python blocks
    with it), each a list of (line number, line)."""
    out, cur = [], None
    for n, line in enumerate(text.splitlines(), 1):
        if cur is None and line.strip() == "```" + lang:
            cur = []
        elif cur is not None and line.strip() == "```":
            out.append(cur)
            cur = None
        elif cur is not None:
            cur.append((n, line))
    if cur is not None:
        raise SystemExit(f"run_guide: an ```{lang} block is not closed")
    return out


def script(block, guide):
    """A bash script for one block: `set -e`, each `# exit N` command checked for its code."""
    lines = ["set -e -o pipefail"]
    tag = None
    for n, line in block:
        if tag is not None:  # inside a heredoc: as written
            lines.append(line)
            if line.strip() == tag:
                tag = None
            continue
        m = EXIT.match(line)
        h = HEREDOC.search(line)
        if h:
            tag = h.group("tag")
        if m and not h:
            want = m.group("code")
            lines.append(f"rc=0; {m.group('cmd')} || rc=$?")
            lines.append(f'[ "$rc" = {want} ] || {{ echo "{guide}:{n}: exit $rc, the guide says {want}" >&2; exit 1; }}')
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    parser = argparse.ArgumentParser(add_help=False, usage=__doc__.strip())
    parser.add_argument("guide")
    parser.add_argument("binary")
    parser.add_argument("source")
    parser.add_argument("--link", action="append", default=[])
    parser.add_argument("--skip-block", action="append", type=int, default=[])
    parser.add_argument("--skip-matching", action="append", default=[])
    try:
        args = parser.parse_args()
    except SystemExit:
        return 2
    guide, binary, source = args.guide, args.binary, args.source
    text = open(guide, encoding="utf-8").read()
    env = dict(os.environ, C=os.path.abspath(source),
               PATH=os.path.dirname(os.path.abspath(binary)) + os.pathsep + os.environ.get("PATH", ""))
    found = blocks(text)
    if not found:
        print(f"run_guide: {guide} has no ```sh block", file=sys.stderr)
        return 1
    commands = 0
    for k in args.skip_block:
        if not 1 <= k <= len(found):
            print(f"run_guide: --skip-block {k}: {guide} has {len(found)} blocks", file=sys.stderr)
            return 2
    skipped = set()
    with tempfile.TemporaryDirectory(prefix="collsched_guide.") as work:
        for link in args.link:
            name, _, target = link.partition("=")
            os.symlink(os.path.abspath(target) if target else os.path.join(os.path.abspath(source), name), os.path.join(work, name))
        for k, block in enumerate(found, 1):
            if k in args.skip_block or any(t in line for t in args.skip_matching for _, line in block):
                skipped.add(k)
                continue
            commands += sum(1 for _, l in block if l.strip() and not l.lstrip().startswith("#"))
            r = subprocess.run(["bash", "-c", script(block, guide)], cwd=work, env=env, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"run_guide: {guide}:{block[0][0]}: the block failed (exit {r.returncode})", file=sys.stderr)
                sys.stderr.write(r.stdout[-4000:] + r.stderr[-4000:])
                return 1
    print(f"run_guide: {len(found) - len(skipped)} blocks, {commands} lines of {guide} ran as the guide says")
    return 0


if __name__ == "__main__":
    sys.exit(main())
