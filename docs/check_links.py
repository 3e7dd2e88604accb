"""Check every internal link and image of the built site: ``python check_links.py DIR``.

Each ``href`` and ``src`` without a scheme must name a file under DIR, and a
``#fragment`` an ``id`` (or ``name``) in that file. Every gallery page must show a
figure its example drew (``_images/sphx_glr_NAME_001.png`` and so on), which is also
what its thumbnail is made from: a page without one has sphinx-gallery's placeholder.
No page may load a script, stylesheet or image from the network: the site reads
offline (maths by the bundled MathJax).
Prints the problems, one per line, and exits with status 1 if there are any.
"""

from __future__ import annotations

import re
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


def remote_assets(site: Path) -> list[str]:
    """Scripts, stylesheets and images the pages load from the network (the site must
    read offline: MathJax and the rest come from ``_static``)."""
    problems = []
    for path in sorted(site.rglob("*.html")):
        if "_static" in path.relative_to(site).parts:
            continue
        page = _Assets()
        page.feed(path.read_text(encoding="utf-8"))
        problems += [
            f"{path.relative_to(site)}: loads {url} from the network" for url in page.remote
        ]
    return problems


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.remote: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        url = found.get("src") if tag in ("script", "img") else None
        if tag == "link" and "stylesheet" in (found.get("rel") or ""):
            url = found.get("href")
        if (
            url
            and urlsplit(url).scheme in ("http", "https", "")
            and url.startswith(("http:", "https:", "//"))
        ):
            self.remote.append(url)


def gallery_without_figures(site: Path) -> list[str]:
    """The gallery's example pages that show no figure of their own."""
    gallery = site / "auto_examples"
    problems = []
    for path in sorted(gallery.glob("*.html")):
        if path.stem in ("index", "sg_execution_times"):
            continue
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        figure = re.compile(rf"_images/sphx_glr_{re.escape(path.stem)}_\d{{3}}\.png$")
        if not any(figure.search(unquote(link)) for link in page.links):
            problems.append(
                f"{path.relative_to(site)}: no figure (the example drew none that "
                "sphinx-gallery saw: its thumbnail is the placeholder)"
            )
    return problems


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "docs/_build/html")
    if not (site / "index.html").is_file():
        print(f"check_links: {site} holds no built site (index.html)", file=sys.stderr)
        return 1
    broken = broken_links(site) + gallery_without_figures(site) + remote_assets(site)
    print(
        "\n".join(broken)
        or f"check_links: every internal link and image resolves in {site}, and every "
        "gallery page shows its figures"
    )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
