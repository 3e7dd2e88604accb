"""Look at the built site in a real browser: ``python check_pages.py DIR``.

Headless Chromium (Debian's package, driven by Playwright) opens the pages offline,
with every request off the machine refused, and checks what a reader sees:

- each gallery page shows its figures, loaded and not blank;
- the gallery's index shows a thumbnail of each example, none the placeholder;
- an API page's maths is typeset by the bundled MathJax (no raw ``\\[ … \\]`` left).

Screenshots of what was checked are written to ``DIR/../screenshots``; prints the
problems, one per line, and exits with status 1 if there are any.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from PIL import Image
from playwright.sync_api import Page, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from browser import CHROMIUM_ARGS, chromium_executable

#: A maths-bearing page of the API reference.
MATHS_PAGE = "api/generated/attnpool.nadaraya_watson.html"
#: sphinx-gallery's placeholder thumbnail.
PLACEHOLDER = "no_image"


def ink(png: bytes) -> float:
    """The share of a screenshot's pixels that are not (near) white."""
    image = Image.open(io.BytesIO(png)).convert("L")
    histogram = image.histogram()
    return 1.0 - sum(histogram[240:]) / max(1, sum(histogram))


def gallery_page(page: Page, path: Path, shots: Path) -> list[str]:
    """Every figure of one example's page, loaded and drawn."""
    page.goto(path.as_uri(), wait_until="load")
    figures = page.locator("img.sphx-glr-single-img, img.sphx-glr-multi-img")
    if figures.count() == 0:
        return [f"{path.name}: no figure on the page"]
    problems = []
    for i in range(figures.count()):
        figure = figures.nth(i)
        figure.scroll_into_view_if_needed()
        if not figure.evaluate("img => img.complete && img.naturalWidth > 0"):
            problems.append(f"{path.name}: figure {i + 1} did not load")
            continue
        shot = figure.screenshot(path=shots / f"{path.stem}_{i + 1:03d}.png")
        if ink(shot) < 0.02:
            problems.append(f"{path.name}: figure {i + 1} is blank ({ink(shot):.1%} ink)")
    return problems


def gallery_index(page: Page, path: Path, shots: Path) -> list[str]:
    """A real thumbnail for each example."""
    page.goto(path.as_uri(), wait_until="load")
    thumbnails = page.locator(".sphx-glr-thumbcontainer img")
    examples = len([p for p in path.parent.glob("plot_*.html")])
    problems = []
    if thumbnails.count() != examples:
        problems.append(f"index.html: {thumbnails.count()} thumbnails for {examples} examples")
    for i in range(thumbnails.count()):
        thumbnail = thumbnails.nth(i)
        source = thumbnail.get_attribute("src") or ""
        if PLACEHOLDER in source:
            problems.append(f"index.html: thumbnail {source} is the placeholder")
        elif not thumbnail.evaluate("img => img.complete && img.naturalWidth > 0"):
            problems.append(f"index.html: thumbnail {source} did not load")
        elif ink(thumbnail.screenshot()) < 0.02:
            problems.append(f"index.html: thumbnail {source} is blank")
    page.locator(".sphx-glr-thumbnails").screenshot(path=shots / "gallery_index.png")
    return problems


def maths(page: Page, path: Path, shots: Path) -> list[str]:
    """The page's maths typeset by the bundled MathJax."""
    page.goto(path.as_uri(), wait_until="load")
    page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("MathJax.startup.promise")
    typeset = page.locator("mjx-container")
    if typeset.count() == 0:
        return [f"{path.name}: no maths typeset (MathJax did not run)"]
    raw = page.locator("div.math").evaluate_all(
        "nodes => nodes.filter(n => !n.querySelector('mjx-container')).length"
    )
    typeset.first.scroll_into_view_if_needed()
    shot = typeset.first.screenshot(path=shots / "maths.png")
    problems = [f"{path.name}: {raw} displayed formulas left as raw TeX"] if raw else []
    if ink(shot) < 0.02:
        problems.append(f"{path.name}: the typeset formula is blank")
    return problems


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "docs/_build/html").resolve()
    if not (site / "index.html").is_file():
        print(f"check_pages: {site} holds no built site (index.html)", file=sys.stderr)
        return 1
    chromium = chromium_executable()
    if chromium is None:
        print("check_pages: needs Chromium; 'apt-get install chromium' failed", file=sys.stderr)
        return 1
    shots = site.parent / "screenshots"
    shots.mkdir(exist_ok=True)
    gallery = site / "auto_examples"
    remote: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        context = browser.new_context(offline=True, viewport={"width": 1200, "height": 900})
        context.route(
            "**/*",
            lambda route: (
                route.abort()
                if not route.request.url.startswith(("file:", "data:"))
                else route.continue_()
            ),
        )
        page = context.new_page()
        page.on("request", lambda r: remote.append(r.url) if r.url.startswith("http") else None)
        problems = []
        for path in sorted(gallery.glob("plot_*.html")):
            problems += gallery_page(page, path, shots)
        problems += gallery_index(page, gallery / "index.html", shots)
        problems += maths(page, site / MATHS_PAGE, shots)
        browser.close()
    problems += [f"requested {url} from the network" for url in sorted(set(remote))]
    print(
        "\n".join(problems)
        or f"check_pages: every gallery figure and thumbnail is drawn and the maths is "
        f"typeset offline (screenshots in {shots})"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
