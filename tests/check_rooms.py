#!/usr/bin/env python3
"""The house's rooms (issue 30): every #include goes down, never up or sideways.

Usage: check_rooms.py SOURCE_DIR

A room is a folder that builds one library (compiler/core, verifier/synth/sat, runtime, ...). ROOMS
below lists, for each, the rooms its files may include besides its own; the lists are closed
under "below" by construction, so the arrows form no cycle (checked here too). A file whose
folder is not a room, an include of a project header that does not exist, and an include that
goes to a room not listed fail the check, with file and line. Tests and fuzz harnesses may
include anything; docs/architecture.md draws the same order.
"""
import pathlib
import re
import sys

# room -> the rooms it may include (besides itself). Order matters only for reading.
BELOW = {
    "support": [],
    "dsl": ["support"],
    "compiler/core": ["dsl"],
    "compiler/topology": ["compiler/core"],
    "compiler/table": ["compiler/topology"],
    "compiler/io": ["compiler/table"],
    "compiler/lower": ["compiler/io"],
    "compiler/interop": ["compiler/io"],
    "compiler/formats": ["compiler/interop"],
    "compiler/machines": ["compiler/interop"],
    # the verifier and the runtime see the compiler's values, not the DSL's syntax
    "verifier/check": ["compiler/lower", "compiler/formats", "-dsl"],
    # the synthesizer's rooms (issue 42): what an instance is; symmetry; lower bounds (no solver);
    # the SAT encodings and solvers (CaDiCaL and Z3 only here) and the constructions, side by side;
    # the searches over both (optimize, pareto, duality, hierarchical compositions, the quotient)
    "verifier/synth/problem": ["verifier/check"],
    "verifier/synth/symmetry": ["verifier/synth/problem"],
    "verifier/synth/bounds": ["verifier/synth/symmetry"],
    "verifier/synth/sat": ["verifier/synth/bounds"],
    "verifier/constructions/steps": ["verifier/synth/bounds"],
    "verifier/synth/search": ["verifier/synth/sat", "verifier/constructions/steps"],
    # what NCCL runs, generated for a machine, and NCCL's model: the tables it builds are checked
    # by verifier/check; it needs nothing of the synthesizer
    "verifier/constructions/nccl": ["verifier/synth/search"],
    # the executor model (issue 55): its constants per executor and protocol with sources, calibrations, the readers of measured times; below the runtime
    "runtime/executor": ["compiler/table", "-dsl"],
    "runtime": ["runtime/executor", "compiler/lower", "compiler/formats", "-dsl"],
    # constructions for time see synth's instances and the runtime's time prediction
    "verifier/constructions/compose": ["verifier/synth/search", "runtime"],
    # the time objective and its bounds (issue 43): the constructions, NCCL's algorithms, the
    # synthesizer's flows, the runtime's time model
    "verifier/time": ["verifier/constructions/compose", "verifier/constructions/nccl", "verifier/synth/search", "runtime"],
    "bench": ["verifier/synth/search", "verifier/constructions/compose", "verifier/time", "runtime"],
    # the command line's library: what the commands and the Python module share (inputs, outputs, options)
    "cli": ["verifier/time", "verifier/synth/search", "verifier/constructions/compose", "verifier/constructions/nccl", "runtime", "bench", "compiler/machines"],
    # the commands, one file each, and the registry that runs them
    "tools": ["cli"],
    "python": ["tools"],
}
OPEN = ("tests", "fuzz")  # may include any room
GENERATED = ("bench/schedules.hpp", "tools/demo_schedule.hpp")  # written into the build tree
SKIP = ("tests/data/", "tests/msccl_parser/", "tests/mscclpp_parser/")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def allowed(room: str) -> set[str]:
    """Every room `room` may include: its own and, transitively, those below it, minus those its
    own list bars with "-name" (a bar holds for that room only, not for the rooms above it)."""
    seen, stack = {room}, [room]
    barred = {b[1:] for b in BELOW[room] if b.startswith("-")}
    while stack:
        for b in BELOW[stack.pop()]:
            if not b.startswith("-") and b not in seen:
                seen.add(b)
                stack.append(b)
    return seen - barred


def room_of(rel: str) -> str | None:
    parts = rel.split("/")
    for depth in (3, 2, 1):
        key = "/".join(parts[:depth])
        if key in BELOW or key in OPEN:
            return key
    return None


def main() -> int:
    root = pathlib.Path(sys.argv[1]).resolve()
    problems = []
    for room in BELOW:  # no cycle: nothing below a room reaches back to it
        for other in allowed(room) - {room}:
            if room in allowed(other):
                problems.append(f"check_rooms.py: {room} and {other} include each other")
    count = 0
    for top in sorted({k.split("/")[0] for k in BELOW} | set(OPEN)):
        for path in sorted((root / top).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.suffix not in (".cpp", ".hpp", ".h") or rel.startswith(SKIP):
                continue
            room = room_of(rel)
            if room is None:
                problems.append(f"{rel}: its folder is not a room (add it to tests/check_rooms.py)")
                continue
            text = path.read_text(errors="replace")
            for m in INCLUDE.finditer(text):
                target = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                target_room = room_of(target)
                if target_room is None or target_room in OPEN:
                    continue  # a generated or local header (et_def.pb.h lives in the build tree)
                count += 1
                if not (root / target).exists() and not target.endswith(".pb.h") and target not in GENERATED:
                    problems.append(f"{rel}:{line}: includes {target}, which does not exist")
                elif room not in OPEN and target_room not in allowed(room):
                    problems.append(f"{rel}:{line}: {room} includes {target} ({target_room} is not below it)")
    for p in problems:
        print(p)
    print(f"{count} includes between rooms, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
