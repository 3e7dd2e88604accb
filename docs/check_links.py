"""Check every internal link and image of the built site: ``python check_links.py DIR``.

Each ``href`` and ``src`` without a scheme must name a file under DIR, and a
``#fragment`` an ``id`` (or ``name``) in that file. Prints the broken ones, one per
line, and exits with status 1 if there are any.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for name in ("id", "name") if tag == "a" else ("id",):
            if found.get(name):
                self.ids.add(found[name])  # type: ignore[arg-type]
        for name in ("href", "src"):
            if found.get(name):
                self.links.append(found[name])  # type: ignore[arg-type]


def broken_links(site: Path) -> list[str]:
    """Every internal link or image of the HTML files under ``site`` that does not resolve."""
    pages: dict[Path, _Page] = {}
    for path in sorted(site.rglob("*.html")):
        if "_static" in path.relative_to(site).parts:  # the theme's templates, not pages
            continue
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path.resolve()] = page
    broken = []
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{path.relative_to(site.resolve())}: {link} (no such file)")
            elif parts.fragment and target in pages and parts.fragment not in pages[target].ids:
                broken.append(f"{path.relative_to(site.resolve())}: {link} (no such anchor)")
    return broken


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "docs/_build/html")
    if not (site / "index.html").is_file():
        print(f"check_links: {site} holds no built site (index.html)", file=sys.stderr)
        return 1
    broken = broken_links(site)
    print("\n".join(broken) or f"check_links: every internal link and image resolves in {site}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
