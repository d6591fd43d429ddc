#!/usr/bin/env python3
"""The constructions' registry is the one table (docs/architecture.md, "The constructions' registry").

Usage: check_constructions.py SOURCE_DIR

Fails, with file and line, when
 - a provider of the time objective (a function taking a CandidateQuery and appending TimeCandidates and
   notes) declared in a header of verifier/ is not named in verifier/time/constructions.cpp, the
   registry's table: a construction for optimize --size is a row, not a list of its own;
 - a steps builder (a function of a StepBuild returning a KnownSchedule) declared in a header of verifier/ is
   not named there either: a construction for optimize is a row;
 - a file of the steps objective (verifier/synth/search/) calls a construction's table builder (a function
   of a header of verifier/constructions/steps/ returning a table, a packing or a greedy result, or
   ring_schedule) other than through the rows, except the methods of search named in SEARCH_USES with why;
 - a file other than the registry, the candidates' gathering and the objective (the library's
   provider) names NamedProvider, or a file other than the registry and the row's own files holds
   a list of rows (std::vector<Construction>): no other file builds a list of providers or rows.
"""
import pathlib
import re
import sys

REGISTRY = "verifier/time/constructions.cpp"
PROVIDER = re.compile(r"void\s+(\w+)\s*\(\s*const\s+CandidateQuery\s*&[^;{]*std::vector<TimeCandidate>\s*&[^;{]*std::vector<std::string>\s*&[^;{]*\)\s*;")
STEP_BUILDER = re.compile(r"std::optional<KnownSchedule>\s+(\w+)\s*\(\s*const\s+StepBuild\s*&\s*\)\s*;")
TABLE_BUILDER = re.compile(r"^(?:std::optional<\w+>|GreedyResult|SendTable)\s+(\w+)\s*\(", re.M)
# What the steps objective's search methods call of the constructions directly, and why each is not a row's builder.
SEARCH_USES = {
    "greedy_synthesize": "optimize --greedy and large machines: the greedy synthesizer is a method of search with its own result",
    "pack_trees": "pareto's bandwidth end: a packing at a target R/C, the frontier's last row, not a schedule of least steps",
    "grow_translates": "optimize in the quotient: the translates' trees without a table, checked in the quotient",
}
MAY_NAME_PROVIDERS = {"verifier/time/candidates.hpp", "verifier/time/candidates.cpp", "verifier/time/constructions.hpp", REGISTRY,
                      "verifier/time/objective.hpp", "verifier/time/objective.cpp"}
MAY_HOLD_ROWS = {"verifier/synth/problem/construction.hpp", "verifier/synth/problem/construction.cpp", "verifier/synth/problem/instance.hpp",
                 "verifier/time/constructions.hpp", REGISTRY}
ROOMS = ("verifier", "cli", "tools", "bench", "python", "runtime", "compiler")


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def search_calls(root: pathlib.Path, errors: list) -> None:
    builders = {"ring_schedule"}
    for h in sorted((root / "verifier/constructions/steps").glob("*.hpp")):
        builders |= {m.group(1) for m in TABLE_BUILDER.finditer(h.read_text())}
    for path in sorted((root / "verifier/synth/search").glob("*.cpp")):
        text = path.read_text()
        for name in sorted(builders - set(SEARCH_USES)):
            for m in re.finditer(r"\b%s\s*\(" % re.escape(name), text):
                errors.append(f"{path.relative_to(root).as_posix()}:{line_of(text, m.start())}: {name} called by the steps objective: "
                              f"try it as a row of {REGISTRY} (stage_schedule, constructed_schedule)")


def main(root: pathlib.Path) -> int:
    registry = (root / REGISTRY).read_text()
    errors = []
    found = {"providers": 0, "step builders": 0}
    for room in ROOMS:
        for path in sorted((root / room).rglob("*")):
            if path.suffix not in (".hpp", ".cpp"):
                continue
            rel = path.relative_to(root).as_posix()
            text = path.read_text(errors="replace")
            if path.suffix == ".hpp":
                for kind, pattern in (("providers", PROVIDER), ("step builders", STEP_BUILDER)):
                    for m in pattern.finditer(text):
                        found[kind] += 1
                        if not re.search(r"\b%s\b" % re.escape(m.group(1)), registry):
                            errors.append(f"{rel}:{line_of(text, m.start())}: {kind[:-1]} {m.group(1)} is not a row of {REGISTRY}")
            if rel not in MAY_NAME_PROVIDERS:
                for m in re.finditer(r"\bNamedProvider\b", text):
                    errors.append(f"{rel}:{line_of(text, m.start())}: a list of providers outside the registry ({REGISTRY}): add a row there")
            if rel not in MAY_HOLD_ROWS:
                for m in re.finditer(r"std::vector<Construction>", text):
                    errors.append(f"{rel}:{line_of(text, m.start())}: a list of rows outside the registry ({REGISTRY}): add a row there")
    search_calls(root, errors)
    for e in errors:
        print(e, file=sys.stderr)
    for kind, n in found.items():
        if n == 0:
            print(f"check_constructions.py: no {kind} declaration found (the pattern is stale)", file=sys.stderr)
            return 1
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")))
