#!/usr/bin/env python3
"""The lock-table protocol page quotes the real SQL (issue 33).

    check_protocol.py SOURCE_DIR [PAGE]

PAGE defaults to docs/site/protocol.md. Every fenced code block of PAGE whose opening fence is
on the line right after an HTML comment

    <!-- source: PATH -->

(PATH relative to SOURCE_DIR, e.g. sql/postgres/acquire_unique_key.sql) must appear in PATH as
a contiguous run of whole lines, exactly (trailing whitespace ignored; the block's own
indentation, that of its fence, removed). Fails, naming the block and the file, when a block
does not, when PATH does not exist or lies outside SOURCE_DIR, when a source comment is not
followed by a fence, when a block is empty or unterminated, and when the page has no such block
at all.
"""
import os
import re
import sys

SOURCE = re.compile(r"^\s*<!--\s*source:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^( *)(`{3,}|~{3,})(.*)$")


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    src = os.path.realpath(argv[1])
    page_rel = argv[2] if len(argv) == 3 else os.path.join("docs", "site", "protocol.md")
    page = os.path.join(src, page_rel)
    failures = []

    def fail(message):
        failures.append(message)
        print("FAIL: " + message, file=sys.stderr)

    try:
        with open(page, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        print(f"FAIL: cannot read {page_rel}: {e.strerror}", file=sys.stderr)
        return 1

    cache = {}

    def source_lines(path):
        if path not in cache:
            with open(path, encoding="utf-8") as f:
                cache[path] = [line.rstrip() for line in f.read().splitlines()]
        return cache[path]

    checked = 0
    i = 0
    while i < len(lines):
        m = SOURCE.match(lines[i])
        if not m:
            i += 1
            continue
        comment_line = i + 1  # 1-based, for messages
        rel = m.group(1)
        where = f"{page_rel}:{comment_line}"
        i += 1
        if not rel:
            fail(f"{where}: a source comment without a path")
            continue
        fence = FENCE.match(lines[i]) if i < len(lines) else None
        if not fence:
            fail(f"{where}: <!-- source: {rel} --> is not followed by a code fence on the next "
                 "line")
            continue
        indent, marker = fence.group(1), fence.group(2)
        first = i + 1
        end = first
        closing = re.compile(r"^ *" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}\s*$")
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        if end >= len(lines):
            fail(f"{where}: the block quoting {rel} is never closed")
            break
        block = []
        for line in lines[first:end]:
            block.append(line[len(indent):] if line.startswith(indent) else line.lstrip(" "))
        block = [line.rstrip() for line in block]
        i = end + 1
        label = f"{where} (the block quoting {rel}, starting {block[0].strip()[:50]!r})" \
            if block else where
        if not block or not any(block):
            fail(f"{where}: the block quoting {rel} is empty")
            continue
        path = os.path.realpath(os.path.join(src, rel))
        if os.path.isabs(rel) or not path.startswith(src + os.sep):
            fail(f"{label}: {rel} is not a path inside the source tree")
            continue
        if not os.path.isfile(path):
            fail(f"{label}: {rel} does not exist")
            continue
        text = source_lines(path)
        n = len(block)
        if any(text[k:k + n] == block for k in range(len(text) - n + 1)):
            checked += 1
            continue
        # Not found: name the first line that departs from the closest partial match.
        best, best_at = 0, None
        for k in range(len(text)):
            run = 0
            while run < n and k + run < len(text) and text[k + run] == block[run]:
                run += 1
            if run > best:
                best, best_at = run, k
        if best_at is None:
            detail = f"its first line {block[0]!r} is not a line of {rel}"
        elif best_at + best >= len(text):
            detail = (f"its first {best} line(s) match {rel} from line {best_at + 1} to the end "
                      f"of the file, but the block goes on with {block[best]!r}")
        else:
            detail = (f"its first {best} line(s) match {rel} from line {best_at + 1}; then the "
                      f"block has {block[best]!r} (page line {first + best + 1}) where {rel} "
                      f"line {best_at + best + 1} has {text[best_at + best]!r}")
        fail(f"{label} is not a contiguous run of lines of {rel}: {detail}")

    if checked == 0 and not failures:
        fail(f"{page_rel} has no code block preceded by <!-- source: PATH -->: nothing checked")
    if failures:
        print(f"check_protocol: {len(failures)} failure(s), {checked} block(s) matched",
              file=sys.stderr)
        return 1
    print(f"check_protocol: {checked} quoted blocks of {page_rel} match their sources "
          f"({len(cache)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
