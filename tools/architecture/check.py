#!/usr/bin/env python3
"""Checks sqlock's source tree against the architecture of DESIGN §4 (layers.json beside this).

Rules, each reported as `path:line: rule: message`:
  layer        an #include that runs up a layer (or out of the public headers), or a file that
               is in no layer
  circle       units (x.hpp + x.cpp) that include each other, directly or round a circle
  backend      a line of code (comments aside) naming a database backend outside src/backends
  long         a function longer than the limit (lines from its signature to its closing brace)
  rows         positional row access (`.at(N)`, `get<N>`, `rows[N]`, `row[N]`...) outside the
               row decoders

Usage: check.py [--root DIR] [--baseline FILE [--write-baseline]] [--summary]
The baseline lists findings still to be fixed (one `rule path what` per line, `what` being the
line's code, the function's name or the included file, so that moving code does not touch it):
they are reported (--summary: counted) but do not fail the check, and an entry that no longer
matches anything fails it, so the baseline only shrinks. Exit status: 0 clean, 1 findings, 2 usage.
"""
import argparse
import bisect
import json
import os
import re
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc")


class Finding:
    def __init__(self, rule, path, line, what, message):
        self.rule, self.path, self.line, self.what, self.message = rule, path, line, what, message

    def key(self):
        return f"{self.rule} {self.path} {self.what}"

    def __str__(self):
        return f"{self.path}:{self.line}: {self.rule}: {self.message}"


# ---------------------------------------------------------------- reading C++


def strip_comments_and_strings(text, keep_strings=False):
    """The text with comments blanked (and string/char literals, unless keep_strings), line
    breaks kept so that line numbers still hold."""
    out = []
    i, n = 0, len(text)
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
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            body = text[i:j]
            out.append(body if keep_strings else "".join(ch if ch == "\n" else " " for ch in body))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator: 1'000
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            body = text[i:j]
            out.append(body if keep_strings else c + " " * (len(body) - 2) + c if len(body) >= 2 else body)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try)\s*(\(|$)")
CTOR_INIT = re.compile(r"\)\s*(noexcept\s*)?:[^:]")


def blank_preprocessor(code):
    return "\n".join("" if row.lstrip().startswith("#") else row for row in code.split("\n"))


def functions(code):
    """(name, first line, last line) of each function body in `code` (comments and strings
    already blanked): a `{` at namespace or class level whose header (the text since the last
    `;`, `{` or `}`) has a parameter list."""
    code = blank_preprocessor(code)
    newlines = [i for i, c in enumerate(code) if c == "\n"]

    def line_at(pos):
        return bisect.bisect_left(newlines, pos) + 1

    found, stack = [], []  # stack of (kind, first line, name)
    header_start = 0
    for i, c in enumerate(code):
        if c not in ";{}":
            continue
        if c == "{":
            header = code[header_start:i]
            kind, name = classify(header, stack)
            if kind == "init":  # a member's brace initializer inside a constructor's header
                stack.append((kind, 0, ""))
                continue
            first = line_at(header_start + len(header) - len(header.lstrip()))
            stack.append((kind, first, name))
        elif c == "}" and stack:
            kind, first, name = stack.pop()
            if kind == "init":
                continue
            if kind == "function":
                found.append((name, first, line_at(i)))
        header_start = i + 1
    return found


def classify(header, stack):
    """What a `{` opens, from the text before it: namespace, class, function, init or other."""
    if any(kind in ("function", "other") for kind, _, _ in stack):
        return "other", ""
    h = " ".join(header.split())
    if re.search(r"\bnamespace\b", h) or re.match(r'^extern\s*"', h):
        return "namespace", ""
    if re.search(r"\b(class|struct|union|enum)\b[^()]*$", h) and "=" not in h:
        return "class", ""
    if CTOR_INIT.search(h) and re.search(r"[\w>]$", h) and not re.search(
            r"\b(const|noexcept|override|final)$", h):
        return "init", ""
    if ")" in h and not CONTROL.search(h) and "=" not in h.split("(")[0]:
        name = re.findall(r"(~?[\w:]+(?:<[^()]*>)?)\s*\(", h)
        return "function", (name[0] if name else "?")
    return "other", ""


# ---------------------------------------------------------------- the rules


def layer_of(path, layers):
    for index, layer in enumerate(layers):
        for p in layer["paths"]:
            if path == p or path.startswith(p + "/"):
                return index
    return None


def resolve_include(root, including, target, roots):
    local = os.path.normpath(os.path.join(os.path.dirname(including), target))
    if os.path.isfile(os.path.join(root, local)):
        return local
    for r in roots:
        candidate = os.path.normpath(os.path.join(r, target))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def unit_of(path):
    return os.path.splitext(path)[0]


def check_includes(root, files, config, findings):
    layers = config["layers"]
    edges = defaultdict(set)  # unit -> units it includes
    first_line = {}
    for path, text in files.items():
        mine = layer_of(path, layers)
        if mine is None:
            findings.append(Finding("layer", path, 1, "no-layer", "the file is in no layer of layers.json"))
        for number, row in enumerate(text.splitlines(), 1):
            m = re.match(r'\s*#\s*include\s*"([^"]+)"', row)
            if not m:
                continue
            target = resolve_include(root, path, m.group(1), config["include_roots"])
            if target is None:
                if m.group(1) not in config.get("generated_includes", []):
                    findings.append(Finding("layer", path, number, m.group(1), f'"{m.group(1)}" is not found'))
                continue
            check_sealed(config, path, number, target, findings)
            theirs = layer_of(target, layers)
            if mine is not None and theirs is not None and theirs != 0 and (mine == 0 or theirs > mine):
                findings.append(Finding("layer", path, number, target,
                                        f"{layers[mine]['name']} includes {target}, of the layer "
                                        f"above it ({layers[theirs]['name']})"))
            if unit_of(target) != unit_of(path):
                edges[unit_of(path)].add(unit_of(target))
                first_line.setdefault((unit_of(path), unit_of(target)), (path, number))
    for circle in circles(edges):
        path, number = first_line[(circle[0], circle[1])]
        findings.append(Finding("circle", path, number, " > ".join(sorted(circle)),
                                "units include each other: " + " -> ".join(circle + [circle[0]])))


def check_sealed(config, path, number, target, findings):
    """A header some layers may not include although it is below them (a strategy sees the
    narrow lock_context, never the whole database handle)."""
    for rule in config.get("sealed_headers", []):
        if target == rule["header"] and under(path, rule["not_from"]):
            findings.append(Finding("sealed", path, number, target,
                                    f"{path} includes {target}: {rule['why']}"))


def circles(edges):
    """Each strongly connected set of more than one unit, as a path round it."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(path_round(sorted(group), edges))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def path_round(group, edges):
    """A circle through the first unit of `group`, inside it."""
    members = set(group)
    start = group[0]
    frontier, came = [start], {start: None}
    while frontier:
        v = frontier.pop(0)
        for w in sorted(edges.get(v, ())):
            if w == start:
                walk = [v]
                while came[walk[-1]] is not None:
                    walk.append(came[walk[-1]])
                return list(reversed(walk))
            if w in members and w not in came:
                came[w] = v
                frontier.append(w)
    return group


def under(path, prefixes):
    return any(path == p or path.startswith(p + "/") for p in prefixes)


def words_of(code_line):
    for ident in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code_line):
        for part in re.split(r"_+|(?<=[a-z0-9])(?=[A-Z])", ident):
            if part:
                yield part.lower()


def check_backend_names(files, config, findings):
    rule = config["backend_rule"]
    words = set(rule["words"])
    for path, text in files.items():
        if not under(path, rule["applies_to"]) or under(path, rule["except_under"]):
            continue
        code = strip_comments_and_strings(text, keep_strings=True)
        for number, row in enumerate(code.splitlines(), 1):
            named = sorted(set(words_of(row)) & words)  # an #include of a backend's file too
            if named:
                findings.append(Finding("backend", path, number, " ".join(row.split()),
                                        f"names a backend ({', '.join(named)}) outside src/backends: "
                                        + row.strip()[:100]))


POSITIONAL = re.compile(r"\.at\(\s*\d+\s*\)|\bget<\s*\d+\s*>|\b(rows?|answer|columns?|cols)\s*\[\s*\d+\s*\]"
                        r"|\.rows\s*\[\s*\d+\s*\]|\.front\(\)\s*\[\s*\d+\s*\]")


def check_rows(files, config, findings):
    rule = config["row_rule"]
    for path, text in files.items():
        if not under(path, rule["applies_to"]) or under(path, rule["except_under"]):
            continue
        code = strip_comments_and_strings(text)
        for number, row in enumerate(code.splitlines(), 1):
            for m in POSITIONAL.finditer(row):
                findings.append(Finding("rows", path, number, " ".join(row.split()),
                                        f"positional row access {m.group(0)!r} outside the decoders"))


def check_functions(files, config, findings):
    rule = config["function_rule"]
    for path, text in files.items():
        if not under(path, rule["applies_to"]) or not path.endswith((".cpp", ".cc")):
            continue
        for name, first, last in functions(strip_comments_and_strings(text)):
            length = last - first + 1
            if length > rule["max_lines"]:
                findings.append(Finding("long", path, first, name,
                                        f"{name} is {length} lines (at most {rule['max_lines']})"))


# ---------------------------------------------------------------- driving


def read_tree(root, sources):
    files = {}
    for top in sources:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith(SOURCE_SUFFIXES):
                    full = os.path.join(dirpath, name)
                    with open(full, encoding="utf-8") as f:
                        files[os.path.relpath(full, root)] = f.read()
    return files


def check(root, config):
    files = read_tree(root, config["sources"])
    findings = []
    check_includes(root, files, config, findings)
    check_backend_names(files, config, findings)
    check_functions(files, config, findings)
    check_rows(files, config, findings)
    return findings


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.normpath(os.path.join(HERE, "..", "..")))
    parser.add_argument("--config", default=os.path.join(HERE, "layers.json"))
    parser.add_argument("--baseline", default=None)
    parser.add_argument("--write-baseline", action="store_true")
    parser.add_argument("--summary", action="store_true", help="counts per rule only")
    args = parser.parse_args()
    with open(args.config, encoding="utf-8") as f:
        config = json.load(f)
    findings = check(args.root, config)
    if args.write_baseline:
        with open(args.baseline, "w", encoding="utf-8") as f:
            f.write("# Findings of tools/architecture/check.py still to be fixed; only ever shrinks.\n")
            for key in sorted({x.key() for x in findings}):
                f.write(key + "\n")
        return 0
    known = set()
    if args.baseline and os.path.exists(args.baseline):
        with open(args.baseline, encoding="utf-8") as f:
            known = {l.strip() for l in f if l.strip() and not l.startswith("#")}
    new = [x for x in findings if x.key() not in known]
    stale = sorted(known - {x.key() for x in findings})
    if args.summary:
        counts = defaultdict(int)
        for x in findings:
            counts[x.rule] += 1
        for rule, count in sorted(counts.items()):
            print(f"{rule:8} {count}")
    else:
        for x in new:
            print(x)
    for key in stale:
        print(f"{args.baseline}: fixed, remove it from the baseline: {key}")
    known_count = len(findings) - len(new)
    print(f"architecture: {len(new)} new finding(s), {known_count} known (baseline), {len(stale)} stale baseline entr(ies)",
          file=sys.stderr)
    return 1 if new or stale else 0


if __name__ == "__main__":
    sys.exit(main())
