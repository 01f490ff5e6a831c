#!/usr/bin/env python3
"""Offline link check of the book (docs/src/**/*.md) and README.md.

Fails on a relative link to a file that does not exist, or to an anchor (`#heading`) that
no heading of the target Markdown file makes. External links (http:, https:, mailto:) are
not fetched. Anchors are made as mdBook and GitHub make them: lower case, punctuation other
than `-` and `_` dropped, spaces as `-`.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[(?:[^\]`]|`[^`]*`)*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def prose_lines(text):
    """The lines of a Markdown file outside fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def anchor(heading):
    heading = re.sub(r"`|\*\*|\*|_(?=\w)", "", heading)
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        text = path.read_text(encoding="utf-8")
        cache[path] = {anchor(m.group(1)) for l in prose_lines(text) if (m := HEADING.match(l))}
    return cache[path]


def check(md):
    errors = []
    text = md.read_text(encoding="utf-8")
    for line in prose_lines(text):
        # Inline code is not a link.
        for target in LINK.findall(re.sub(r"`[^`]*`", "``", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            file_part, _, frag = target.partition("#")
            dest = (md.parent / file_part).resolve() if file_part else md
            where = f"{md.relative_to(ROOT)}: {target}"
            if not dest.exists():
                errors.append(f"{where}: no such file")
            elif frag and dest.suffix == ".md" and frag not in anchors(dest):
                errors.append(f"{where}: no heading makes #{frag}")
    return errors


def main():
    files = [ROOT / "README.md", *sorted((ROOT / "docs" / "src").rglob("*.md"))]
    errors = [e for f in files for e in check(f)]
    # Every chapter is in the summary, so none is left out of the book.
    summary = (ROOT / "docs" / "src" / "SUMMARY.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([^)]+\.md)\)", summary))
    for f in files[1:]:
        rel = f.relative_to(ROOT / "docs" / "src").as_posix()
        if rel != "SUMMARY.md" and rel not in listed:
            errors.append(f"docs/src/{rel}: not in SUMMARY.md")
    for e in errors:
        print(e, file=sys.stderr)
    print(f"checked {len(files)} files: {len(errors)} broken links")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
