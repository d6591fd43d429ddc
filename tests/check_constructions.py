#!/usr/bin/env python3
"""The constructions' registry is the one list (docs/architecture.md, "The constructions' registry").

Usage: check_constructions.py SOURCE_DIR

Fails, with file and line, when
 - a provider of the time objective (a function taking a CandidateQuery and appending TimeCandidates and
   notes) declared in a header of verifier/ is not named in verifier/time/constructions.cpp, the
   registry's rows: a construction for optimize --size is a row, not a list of its own;
 - a file other than the registry, the candidates' gathering and the objective (the library's
   provider) names NamedProvider: no other file builds a list of providers.
"""
import pathlib
import re
import sys

REGISTRY = "verifier/time/constructions.cpp"
PROVIDER = re.compile(r"void\s+(\w+)\s*\(\s*const\s+CandidateQuery\s*&[^;{]*std::vector<TimeCandidate>\s*&[^;{]*std::vector<std::string>\s*&[^;{]*\)\s*;")
MAY_NAME_PROVIDERS = {"verifier/time/candidates.hpp", "verifier/time/candidates.cpp", "verifier/time/constructions.hpp", REGISTRY,
                      "verifier/time/objective.hpp", "verifier/time/objective.cpp"}
ROOMS = ("verifier", "cli", "tools", "bench", "python", "runtime", "compiler")


def main(root: pathlib.Path) -> int:
    registry = (root / REGISTRY).read_text()
    errors = []
    for room in ROOMS:
        for path in sorted((root / room).rglob("*")):
            if path.suffix not in (".hpp", ".cpp"):
                continue
            rel = path.relative_to(root).as_posix()
            text = path.read_text(errors="replace")
            if path.suffix == ".hpp":
                for m in PROVIDER.finditer(text):
                    if not re.search(r"\b%s\b" % re.escape(m.group(1)), registry):
                        line = text.count("\n", 0, m.start()) + 1
                        errors.append(f"{rel}:{line}: provider {m.group(1)} is not a row of {REGISTRY}")
            if rel not in MAY_NAME_PROVIDERS:
                for m in re.finditer(r"\bNamedProvider\b", text):
                    line = text.count("\n", 0, m.start()) + 1
                    errors.append(f"{rel}:{line}: a list of providers outside the registry ({REGISTRY}): add a row there")
    for e in errors:
        print(e, file=sys.stderr)
    providers = sum(len(PROVIDER.findall((root / p).read_text())) for p in ("verifier/time/synth_candidates.hpp", "verifier/time/compose_candidates.hpp"))
    if providers == 0:
        print("check_constructions.py: no provider declaration found (the pattern is stale)", file=sys.stderr)
        return 1
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")))
