#!/usr/bin/env python3
"""Checks the relative links of the repository's Markdown files.

Every inline link [text](target) and image whose target is not a URL must name a file or folder
that exists (relative to the file that links), and a `#anchor` on a Markdown target (or alone)
must be one of that file's headings, slugged as GitHub does. Links inside code blocks and code
spans are not links and are skipped.

  scripts/check_doc_links.py [FILE.md ...]   default: every tracked *.md file
  scripts/check_doc_links.py --self-test     checks the checker on a few made-up files

Prints one line per broken link (FILE:LINE: target: why) and exits 1 when there is any.
"""
import os
import re
import subprocess
import sys
import tempfile

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# A code span may run over a line break, not over a blank line.
CODE_SPAN_ANY = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)\1", re.S)


def slug(heading):
    """GitHub's anchor for a heading: the rendered text, lowercased, punctuation dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links -> their text
    text = CODE_SPAN.sub(lambda m: m.group(2), text)  # code spans -> their content
    text = re.sub(r"<[^>]+>", "", text).replace("*", "")
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def read_lines(path):
    """The file's lines outside fenced code blocks, as (line number, text)."""
    out, fenced = [], False
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                out.append((no, line.rstrip("\n")))
    return out


def prose(path):
    """The file's text with fenced code blocks and code spans blanked (line breaks kept), so that
    a link or a code span running over a line break is still seen whole."""
    lines, fenced = [], False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                fenced = not fenced
                lines.append("\n")
            else:
                lines.append("\n" if fenced else line)
    text = "".join(lines)
    return CODE_SPAN_ANY.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


_anchor_cache = {}


def anchors(path):
    path = os.path.realpath(path)
    if path not in _anchor_cache:
        seen, result = {}, set()
        for _, line in read_lines(path):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            result.add(base if n == 0 else "%s-%d" % (base, n))
        _anchor_cache[path] = result
    return _anchor_cache[path]


def check_file(path):
    problems = []
    text = prose(path)
    for m in LINK.finditer(text):
        no = text.count("\n", 0, m.start()) + 1
        target = m.group(1)
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part \
            else path
        if not os.path.exists(dest):
            problems.append("%s:%d: %s: no such file or folder" % (path, no, target))
            continue
        if anchor and dest.endswith(".md") and anchor not in anchors(dest):
            problems.append("%s:%d: %s: no heading with anchor #%s in %s"
                            % (path, no, target, anchor, dest))
    return problems


def tracked_markdown(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "*.md"], check=True,
                             capture_output=True, text=True).stdout.split()
        return [os.path.join(root, p) for p in out]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
            found += [os.path.join(d, f) for f in files if f.endswith(".md")]
        return found


def self_test():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "docs"))
        with open(os.path.join(d, "docs", "a.md"), "w") as f:
            f.write("# A title\n\n## The `x: y` part (issue 1; [b](b.md))\n\n## Twice\n\n## Twice\n")
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write("[ok](docs/a.md) [ok](docs/a.md#the-x-y-part-issue-1-b) [ok](docs/a.md#twice-1)\n"
                    "[ok](#readme) [url](https://example.com/x.md#nope) `[code](nope.md)`\n"
                    "```\n[fenced](nope.md)\n```\n"
                    "# Readme\n"
                    "[bad](docs/missing.md) [bad](docs/a.md#nope) [bad](#nope)\n"
                    "a `code span\nacross [lines](nope.md)` and [a link\nacross lines](docs/a.md#twice)\n"
                    "[a bad link\nacross lines](docs/a.md#nope)\n")
        problems = check_file(os.path.join(d, "README.md"))
        bad = [p for p in problems if "bad" in p or "missing" in p or "nope" in p]
        expected = 4
        if len(problems) != expected or len(bad) != expected:
            print("self-test FAILED:\n" + "\n".join(problems))
            return 1
    print("self-test passed")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = argv[1:] or tracked_markdown(root)
    problems = []
    for path in files:
        problems += check_file(os.path.relpath(path))
    for p in problems:
        print(p)
    print("%d files, %d broken links" % (len(files), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
