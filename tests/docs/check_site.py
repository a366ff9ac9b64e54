#!/usr/bin/env python3
"""Checks of the documentation site that `mkdocs build --strict` (1.4.2) does not make.

    check_site.py SOURCE_DIR BUILT_SITE_DIR MKDOCS_LOG

- every page under docs_dir is in mkdocs.yml's nav, and every nav entry is a page
  (mkdocs 1.4.2 only logs the first at INFO level, which --strict lets pass);
- every relative link of the built site resolves to a file, and its #fragment to an id in it
  (mkdocs 1.4.2 checks neither anchors nor links written as HTML);
- every relative link of README.md resolves to a file of the source tree, and a #fragment
  into a Markdown file to one of its headings (as GitHub makes their ids).
"""
import html.parser
import os
import re
import sys
import urllib.parse

import yaml

src, site, log = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message, file=sys.stderr)


with open(os.path.join(src, "mkdocs.yml"), encoding="utf-8") as f:
    config = yaml.safe_load(f)
docs_dir = os.path.join(src, config.get("docs_dir", "docs"))

# --- the nav -------------------------------------------------------------------------------
def nav_pages(entry):
    if isinstance(entry, str):
        yield entry
    elif isinstance(entry, list):
        for item in entry:
            yield from nav_pages(item)
    elif isinstance(entry, dict):
        for value in entry.values():
            yield from nav_pages(value)


in_nav = [p for p in nav_pages(config.get("nav", [])) if not re.match(r"^[a-z]+://", p)]
pages = sorted(
    os.path.relpath(os.path.join(root, name), docs_dir)
    for root, _, names in os.walk(docs_dir)
    for name in names
    if name.endswith(".md")
)
for page in pages:
    if page not in in_nav:
        fail(f"docs/site page {page} is not in the nav of mkdocs.yml")
for page in in_nav:
    if page not in pages:
        fail(f"the nav of mkdocs.yml names {page}, which is not a page")
for dup in sorted({p for p in in_nav if in_nav.count(p) > 1}):
    fail(f"the nav of mkdocs.yml names {dup} more than once")
with open(log, encoding="utf-8", errors="replace") as f:
    if 'not included in the "nav"' in f.read():
        fail("mkdocs reports pages that are not in the nav (see its output above)")


# --- links and anchors of the built site ----------------------------------------------------
class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        for attr in ("href", "src"):
            if a.get(attr) is not None and tag in ("a", "img", "link", "script"):
                self.links.append(a[attr])


parsed = {}


def parse(path):
    if path not in parsed:
        p = Links()
        with open(path, encoding="utf-8") as f:
            p.feed(f.read())
        parsed[path] = p
    return parsed[path]


html_files = [
    os.path.join(root, name)
    for root, _, names in os.walk(site)
    for name in names
    if name.endswith(".html")
]
if not html_files:
    fail(f"no HTML page in {site}")
checked = 0
for page in sorted(html_files):
    shown = os.path.relpath(page, site)
    for link in parse(page).links:
        url = urllib.parse.urlsplit(link)
        if url.scheme or url.netloc or link.startswith("//"):
            continue  # external: not checked (the build has no network)
        target = page
        if url.path:
            base = site if url.path.startswith("/") else os.path.dirname(page)
            target = os.path.normpath(os.path.join(base, urllib.parse.unquote(url.path).lstrip("/")))
            if os.path.isdir(target):
                target = os.path.join(target, "index.html")
        checked += 1
        if not os.path.exists(target):
            fail(f"{shown}: link {link} leads nowhere")
            continue
        if url.fragment and target.endswith(".html"):
            if urllib.parse.unquote(url.fragment) not in parse(target).ids:
                fail(f"{shown}: link {link}: no #{url.fragment} in {os.path.relpath(target, site)}")


# --- README.md --------------------------------------------------------------------------------
def github_slug(heading):
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def headings(path):
    slugs, fence = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            elif not fence and re.match(r"^#{1,6} ", line):
                slugs.add(github_slug(line.lstrip("#")))
            for anchor in re.findall(r'<a id="([^"]+)"', line):
                slugs.add(anchor)
    return slugs


readme = os.path.join(src, "README.md")
with open(readme, encoding="utf-8") as f:
    text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
for link in re.findall(r"\]\(([^)\s]+)\)", text):
    url = urllib.parse.urlsplit(link)
    if url.scheme or url.netloc:
        continue
    target = os.path.normpath(os.path.join(src, url.path)) if url.path else readme
    checked += 1
    if not os.path.exists(target):
        fail(f"README.md: link {link} leads nowhere")
    elif url.fragment and target.endswith(".md") and url.fragment not in headings(target):
        fail(f"README.md: link {link}: no heading #{url.fragment} in {os.path.relpath(target, src)}")

if failures:
    print(f"check_site: {len(failures)} failure(s)", file=sys.stderr)
    sys.exit(1)
print(f"check_site: {len(pages)} pages, all in the nav; {checked} relative links and anchors "
      f"resolve ({len(html_files)} HTML files and README.md)")
