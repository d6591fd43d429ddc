#!/usr/bin/env python3
"""Checks that the docs hold together: every relative link of README.md and docs/*.md names a file
that exists and, with #anchor, a heading of that file (GitHub's slugs); and every section the
sources cite by title (docs/x.md, "Title" in a comment, a message or a --help text) begins a
heading, or a bold term (a run-in title of a paragraph or list item), of that page. Usage: check_doc_links.py SOURCE_DIR. Prints each broken one; exit 1 if any."""
import pathlib
import re
import sys

SOURCE = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()


def slug(title):
    """GitHub's anchor of a heading: lower case, markup dropped, punctuation but - and _ dropped,
    spaces to -."""
    t = re.sub(r"`|\*\*|\*", "", title.strip()).lower()
    t = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", t)
    t = re.sub(r"[^\w\- ]", "", t)
    return t.replace(" ", "-")


def headings(path):
    titles, anchors, fence = [], set(), False
    counts = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
            continue
        if not fence:  # a bold term (a run-in title of a paragraph or item) is a place a source may cite
            titles.extend(b.strip() for b in re.findall(r"\*\*([^*]+)\*\*", line))
        m = None if fence else re.match(r"#{1,6} (.*)", line)
        if m:
            titles.append(m.group(1).strip())
            s = slug(m.group(1))
            n = counts.get(s, 0)
            counts[s] = n + 1
            anchors.add(s if n == 0 else f"{s}-{n}")
    return titles, anchors


def main():
    pages = [SOURCE / "README.md"] + sorted((SOURCE / "docs").glob("*.md"))
    cache = {}

    def info(p):
        if p not in cache:
            cache[p] = headings(p)
        return cache[p]

    bad = []
    link = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
    for page in pages:
        fence = False
        for no, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            for target in link.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue
                file, _, anchor = target.partition("#")
                dest = (page.parent / file).resolve() if file else page
                where = f"{page.relative_to(SOURCE)}:{no}: {target}"
                if not dest.exists():
                    bad.append(f"{where}: no such file")
                elif anchor and dest.suffix == ".md" and anchor not in info(dest)[1]:
                    bad.append(f"{where}: no heading with this anchor")

    cite = re.compile(r'docs/([a-z0-9-]+\.md),? \\?"([^"\\]+)')
    for src in SOURCE.rglob("*"):
        if src.suffix not in {".cpp", ".hpp", ".py", ".sh", ".txt", ".cmake"} or "build" in src.parts:
            continue
        if any(part.startswith(".") for part in src.relative_to(SOURCE).parts) or src.name == "check_doc_links.py":
            continue
        try:
            text = src.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for no, line in enumerate(text.splitlines(), 1):
            for page, title in cite.findall(line):
                dest = SOURCE / "docs" / page
                where = f"{src.relative_to(SOURCE)}:{no}: docs/{page}, \"{title}\""
                if not dest.exists():
                    bad.append(f"{where}: no such page")
                    continue
                t = title.strip().rstrip(",.;:").lower().replace("`", "")
                heads = [re.sub(r"^[0-9]+\. ", "", h.lower().replace("`", "")) for h in info(dest)[0]]
                if not any(h.startswith(t) for h in heads):
                    bad.append(f"{where}: no heading begins so")
    for b in bad:
        print(b)
    print(f"{len(bad)} broken link(s) or citation(s)" if bad else "every link, anchor and cited section resolves")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
