#!/usr/bin/env python3
"""The house's size rule (issue 30): no source file over 800 lines, no function over 120 lines.

Usage: check_sizes.py SOURCE_DIR [--list]

Reads every .cpp and .hpp under the project's folders (compiler, dsl, runtime, support, cli, tools,
verifier, tests, bench, fuzz; not build trees, not tests/data or third-party stand-ins) and
counts function bodies by brace matching: comments, string and character literals are blanked
first; a `{` opens a function body when no function is open and the text before it (since the
last `;`, `{` or `}`) ends in a parameter list `(...)`, optionally followed by qualifiers, a
trailing return type or a constructor's initializer list, and is not a control statement, a
class, an enum, a namespace or an initializer. Lambdas and local classes count as part of the
function that holds them. A function's length is its lines from its `{` to its `}`.

tests/size_exceptions.txt lists what may exceed the limits, one `path` (a file) or
`path:function` per line with a comment saying why (empty since issue 30 finished: only a
generated table that cannot be split belongs there). The check fails on an offender that is not
listed and on a listed entry that no longer exceeds its limit. --list prints every offender in the exceptions' format.
"""
import pathlib
import re
import sys

FILE_LIMIT = 800
FUNCTION_LIMIT = 120
TOOLS_LIMIT = 400
FOLDERS = ("compiler", "dsl", "runtime", "support", "cli", "tools", "verifier", "tests", "bench", "fuzz")
SKIP = ("tests/data/", "tests/msccl_parser/", "tests/mscclpp_parser/")
CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof", "static_assert", "do", "else", "TEST_SUITE", "TEST_CASE", "SUBCASE"}


def blank(text: str) -> str:
    """Comments, strings and character literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


HEAD_END = re.compile(
    r"\)\s*(const|noexcept(\s*\([^)]*\))?|override|final|mutable|&|&&|\s)*"
    r"(->\s*[\w:<>,\s\*&]+)?\s*$"
)
NAME = re.compile(r"([~\w:]+(?:<[^<>]*>)?|operator\s*[^\s(]+)\s*\($")


def function_name(head: str):
    """The function's name when `head` (the text before a `{`) is a function's header, else None."""
    h = " ".join(head.split())
    if not h or h.endswith("=") or re.search(r"\b(class|struct|union|enum|namespace)\b[^()]*$", h):
        return None
    # A constructor's initializer list: cut at the ':' that follows the parameter list.
    m = re.search(r"\)\s*(?:noexcept\s*)?:\s*[\w:]+\s*[({]", h)
    if m:
        h = h[: m.start() + 1]
    if not HEAD_END.search(h):
        return None
    depth, k = 0, len(h) - 1
    while k >= 0:  # the '(' that opens the last parameter list
        if h[k] == ")":
            depth += 1
        elif h[k] == "(":
            depth -= 1
            if depth == 0:
                break
        k -= 1
    if k <= 0:
        return None
    m = NAME.search(h[: k + 1])
    if not m:
        return None
    name = m.group(1)
    if name.split("::")[-1] in CONTROL or name in CONTROL:
        return None
    return name


def functions(text: str):
    """(name, first line, lines) of every function body of a file."""
    s = blank(text)
    out, stack, last = [], [], 0  # stack: (is_function, name, line)
    line = 1
    for i, c in enumerate(s):
        if c == "\n":
            line += 1
        elif c == "{":
            in_function = any(f for f, _, _ in stack)
            name = None if in_function else function_name(s[last:i])
            stack.append((name is not None, name, line))
            last = i + 1
        elif c == "}":
            if stack:
                is_fn, name, start = stack.pop()
                if is_fn:
                    out.append((name, start, line - start + 1))
            last = i + 1
        elif c == ";":
            last = i + 1
    return out


def offenders(root: pathlib.Path):
    found = {}
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.suffix not in (".cpp", ".hpp") or any(rel.startswith(s) for s in SKIP) or "/build" in rel:
                continue
            text = path.read_text(errors="replace")
            n = text.count("\n")
            if n > FILE_LIMIT:
                found[rel] = f"{n} lines"
            for name, start, length in functions(text):
                if length > FUNCTION_LIMIT:
                    found.setdefault(f"{rel}:{name}", f"{length} lines from line {start}")
    return found


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    found = offenders(root)
    if "--list" in sys.argv[2:]:
        for key, what in sorted(found.items()):
            print(f"{key}  # {what}")
        return 0
    listed = set()
    for raw in (root / "tests/size_exceptions.txt").read_text().splitlines():
        entry = raw.split("#", 1)[0].strip()
        if entry:
            listed.add(entry)
    bad = [f"{k}: {v} (limit {FILE_LIMIT} lines a file, {FUNCTION_LIMIT} a function); split it" for k, v in sorted(found.items())
           if k not in listed]
    bad += [f"{k}: listed in tests/size_exceptions.txt but within the limits now; remove the line" for k in sorted(listed - found.keys())]
    beside = {f.name: len(f.read_text().splitlines()) for f in sorted((root / "tools").iterdir())
              if f.is_file() and not f.name.startswith("cmd_") and f.name != "CMakeLists.txt"}
    if sum(beside.values()) >= TOOLS_LIMIT:
        bad.append(f"tools/: {sum(beside.values())} lines beside its commands ({', '.join(f'{k} {v}' for k, v in beside.items())}); "
                   f"the limit is under {TOOLS_LIMIT}: move what the commands share to cli/")
    for b in bad:
        print(b)
    print(f"{len(found)} over the limits, {len(listed)} listed, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
