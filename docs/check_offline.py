"""Fail when a built HTML page would fetch anything from the network.

The documentation must work offline: every script, stylesheet, font and image
comes from the site itself. This scans the built HTML (and the CSS it ships)
for remote assets -- a ``src``/``href`` of a script, stylesheet, image, font
or frame that starts with ``http://``, ``https://`` or ``//``, a CSS
``url(...)``/``@import`` of one -- and for the names of public CDNs anywhere
(``cdn.jsdelivr``, ``cdnjs``, ``unpkg.com``, ...). Plain hyperlinks
(``<a href="https://...">``) are fine: following one is the reader's choice.

Run ``python docs/check_offline.py docs/_build/html``; ``conf.py`` also runs
it at the end of every HTML build, where a finding is a build warning (an
error under ``-W``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

CDN_HOSTS = (
    "cdn.jsdelivr",
    "cdnjs",
    "unpkg.com",
    "ajax.googleapis.com",
    "fonts.googleapis.com",
    "fonts.gstatic.com",
    "code.jquery.com",
    "polyfill.io",
    "mathjax.org",
)
_REMOTE = r"(?:https?:)?//"
# Tags whose src/href is loaded by the browser (not followed by the reader).
_ASSET_TAG = re.compile(
    r"<(script|img|iframe|embed|source|audio|video|input)\b[^>]*?\bsrc\s*=\s*"
    rf"[\"']?\s*{_REMOTE}[^\"'\s>]*",
    re.IGNORECASE,
)
_LINK_TAG = re.compile(r"<link\b[^>]*>", re.IGNORECASE)
_LINK_LOADS = re.compile(
    r"\brel\s*=\s*[\"']?[^\"'>]*\b(stylesheet|preload|modulepreload|icon|"
    r"prefetch|manifest)\b",
    re.IGNORECASE,
)
_LINK_REMOTE_HREF = re.compile(rf"\bhref\s*=\s*[\"']?\s*{_REMOTE}", re.IGNORECASE)
_CSS_REMOTE = re.compile(
    rf"(?:url\(\s*[\"']?\s*|@import\s+[\"']\s*){_REMOTE}[^\"'\s)]*", re.IGNORECASE
)
_JS_IMPORT = re.compile(
    rf"(?:\bimport\s*\(?\s*|\bfrom\s+)[\"']{_REMOTE}[^\"']*", re.IGNORECASE
)
_CDN = re.compile("|".join(re.escape(host) for host in CDN_HOSTS), re.IGNORECASE)


def find_remote_assets(text: str) -> list[str]:
    """Return the snippets of ``text`` (HTML or CSS) that load a remote asset."""
    spans = [match.span() for match in _ASSET_TAG.finditer(text)]
    for tag in _LINK_TAG.finditer(text):
        link = tag.group(0)
        if _LINK_LOADS.search(link) and _LINK_REMOTE_HREF.search(link):
            spans.append(tag.span())
    spans += [match.span() for match in _CSS_REMOTE.finditer(text)]
    spans += [match.span() for match in _JS_IMPORT.finditer(text)]
    # A CDN name anywhere else (inline code building a URL, say) counts too.
    for match in _CDN.finditer(text):
        if not any(start <= match.start() < end for start, end in spans):
            spans.append((max(match.start() - 40, 0), match.end() + 40))
    return [text[start:end].replace("\n", " ") for start, end in sorted(spans)]


def check_site(html_dir) -> list[str]:
    """Return ``"page: snippet"`` for each remote asset under ``html_dir``.

    HTML pages and the CSS files the site ships are scanned; the JavaScript
    and font files of the bundled MathJax are not (MathJax's sources name its
    own CDN in comments and fallbacks it never uses with a local path).
    """
    html_dir = Path(html_dir)
    problems = []
    files = sorted(html_dir.rglob("*.html")) + sorted(html_dir.rglob("*.css"))
    for path in files:
        if "mathjax" in path.relative_to(html_dir).parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for snippet in find_remote_assets(text):
            problems.append(f"{path.relative_to(html_dir)}: {snippet}")
    return problems


def main(argv=None) -> int:
    """Command line: exit 1 and list the findings when there are any."""
    argv = sys.argv[1:] if argv is None else argv
    html_dir = Path(argv[0] if argv else "docs/_build/html")
    if not (html_dir / "index.html").is_file():
        print(f"check_offline: no built site at {html_dir}", file=sys.stderr)
        return 2
    problems = check_site(html_dir)
    for problem in problems:
        print(f"remote asset: {problem}", file=sys.stderr)
    n_pages = len(list(html_dir.rglob("*.html")))
    if problems:
        print(f"check_offline: {len(problems)} remote asset(s) found", file=sys.stderr)
        return 1
    print(f"check_offline: {n_pages} pages load nothing from the network")
    return 0


if __name__ == "__main__":
    sys.exit(main())
