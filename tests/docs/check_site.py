#!/usr/bin/env python3
"""Checks of the documentation site that `mkdocs build --strict` (1.4.2) does not make.

    check_site.py SOURCE_DIR BUILT_SITE_DIR MKDOCS_LOG
    check_site.py --installed SITE_DIR

- every page under docs_dir is in mkdocs.yml's nav, and every nav entry is a page
  (mkdocs 1.4.2 only logs the first at INFO level, which --strict lets pass);
- every relative link of the built site resolves to a file, and its #fragment to an id in it
  (mkdocs 1.4.2 checks neither anchors nor links written as HTML);
- every relative link of README.md resolves to a file of the source tree, and a #fragment
  into a Markdown file to one of its headings (as GitHub makes their ids).

With --installed, a site as the sqlock-doc package installs it (tests/packages/run.sh:
/usr/share/doc/sqlock-doc/html) is checked to open: its index.html parses as HTML with a
<title> and links at least one stylesheet and one script, and every relative link and anchor
of every page (stylesheets, scripts and images included) resolves to a file of SITE_DIR
without a path from the root (which, opened as a file://, leads to the root of the disk).
"""
import html.parser
import os
import re
import sys
import urllib.parse

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message, file=sys.stderr)


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


def check_nav(src, log):
    """Every page in the nav and every nav entry a page; returns the pages."""
    import yaml  # python3-yaml: only this check needs it

    with open(os.path.join(src, "mkdocs.yml"), encoding="utf-8") as f:
        config = yaml.safe_load(f)
    docs_dir = os.path.join(src, config.get("docs_dir", "docs"))
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
    return pages


# --- links and anchors of the built site ----------------------------------------------------
class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links, self.tags = set(), [], []
        self.title, self.stylesheets, self.scripts = None, [], []
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        for attr in ("href", "src"):
            if a.get(attr) is not None and tag in ("a", "img", "link", "script"):
                self.links.append(a[attr])
        if tag == "link" and "stylesheet" in (a.get("rel") or "").split() and a.get("href"):
            self.stylesheets.append(a["href"])
        if tag == "script" and a.get("src"):
            self.scripts.append(a["src"])
        if tag == "title":
            self._in_title, self.title = True, ""

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


parsed = {}


def parse(path):
    if path not in parsed:
        p = Page()
        with open(path, encoding="utf-8") as f:
            p.feed(f.read())
        p.close()
        parsed[path] = p
    return parsed[path]


def local_target(page, link, site, installed=False):
    """The file a relative link of PAGE leads to, or None for an external one. Installed, a
    page is opened as a file://, where a path from the root leads to the root of the disk."""
    url = urllib.parse.urlsplit(link)
    if url.scheme or url.netloc or link.startswith("//"):
        return None  # external: not checked (the build has no network)
    target = page
    if url.path:
        base = site if url.path.startswith("/") and not installed else os.path.dirname(page)
        target = os.path.normpath(os.path.join(base, urllib.parse.unquote(url.path).lstrip("/")))
        if os.path.isdir(target):
            target = os.path.join(target, "index.html")
    return target


def check_links(site, installed=False):
    """Every relative link and #anchor of every HTML page of SITE; returns (pages, links)."""
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
            target = local_target(page, link, site, installed)
            if target is None:
                continue
            checked += 1
            if installed and link.startswith("/"):
                fail(f"{shown}: link {link} is a path from the root: opened as a file, it leads "
                     "out of the site")
                continue
            if not os.path.exists(target):
                fail(f"{shown}: link {link} leads nowhere")
                continue
            if not os.path.realpath(target).startswith(os.path.realpath(site) + os.sep):
                fail(f"{shown}: link {link} leads out of the site")
                continue
            fragment = urllib.parse.urlsplit(link).fragment
            if fragment and target.endswith(".html"):
                if urllib.parse.unquote(fragment) not in parse(target).ids:
                    fail(f"{shown}: link {link}: no #{fragment} in {os.path.relpath(target, site)}")
    return len(html_files), checked


def check_index_opens(site):
    """index.html: HTML with a <title>, its stylesheets and scripts files of SITE."""
    index = os.path.join(site, "index.html")
    if not os.path.isfile(index):
        fail(f"no index.html in {site}")
        return
    with open(index, encoding="utf-8") as f:
        head = f.read(200).lstrip().lower()
    if not head.startswith("<!doctype html"):
        fail("index.html does not start with <!doctype html>")
    page = parse(index)
    if "html" not in page.tags or "body" not in page.tags:
        fail("index.html has no <html> or no <body>")
    if not (page.title or "").strip():
        fail("index.html has no <title>")
    for kind, links in (("stylesheet", page.stylesheets), ("script", page.scripts)):
        local = [link for link in links if local_target(index, link, site, True) is not None]
        if not local:
            fail(f"index.html links no {kind} of its own")
        for link in local:
            if not os.path.isfile(local_target(index, link, site, True)):
                fail(f"index.html: its {kind} {link} is not installed")
    print(f"check_site: index.html opens: {page.title.strip()!r}, "
          f"{len(page.stylesheets)} stylesheet(s) and {len(page.scripts)} script(s) present")


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


def check_readme(src):
    """Every relative link of README.md; returns how many."""
    readme = os.path.join(src, "README.md")
    with open(readme, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    checked = 0
    for link in re.findall(r"\]\(([^)\s]+)\)", text):
        url = urllib.parse.urlsplit(link)
        if url.scheme or url.netloc:
            continue
        target = os.path.normpath(os.path.join(src, url.path)) if url.path else readme
        checked += 1
        if not os.path.exists(target):
            fail(f"README.md: link {link} leads nowhere")
        elif url.fragment and target.endswith(".md") and url.fragment not in headings(target):
            fail(f"README.md: link {link}: no heading #{url.fragment} in "
                 f"{os.path.relpath(target, src)}")
    return checked


def main(argv):
    if len(argv) == 3 and argv[1] == "--installed":
        site = argv[2]
        check_index_opens(site)
        html_files, checked = check_links(site, installed=True)
        summary = (f"{site}: {html_files} HTML files, {checked} relative links and anchors "
                   "resolve")
    elif len(argv) == 4 and not argv[1].startswith("-"):
        src, site, log = argv[1:]
        pages = check_nav(src, log)
        html_files, checked = check_links(site)
        checked += check_readme(src)
        summary = (f"{len(pages)} pages, all in the nav; {checked} relative links and anchors "
                   f"resolve ({html_files} HTML files and README.md)")
    else:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if failures:
        print(f"check_site: {len(failures)} failure(s)", file=sys.stderr)
        return 1
    print(f"check_site: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
