"""The HTML report, opened in a real headless Chromium (Debian's package) by Playwright."""

import re
import subprocess
import sys

import pytest
from PIL import Image
from playwright.sync_api import sync_playwright

from browser import CHROMIUM_ARGS, chromium_executable

# These tests share one worker (the page is built once).
pytestmark = pytest.mark.xdist_group("report")


@pytest.fixture(scope="session")
def chromium_path():
    """Debian's Chromium, installed by this set-up when the machine lacks it."""
    path = chromium_executable()
    if path is None:
        pytest.fail("the report tests need Chromium; 'apt-get install chromium' did not provide it")
    return path


@pytest.fixture(scope="module")
def report_page(tmp_path_factory, chromium_path):
    out = tmp_path_factory.mktemp("demo")
    result = subprocess.run(
        [sys.executable, "-m", "attnpool", "demo", "--html", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "report.html" in result.stdout
    return out / "report.html"


@pytest.fixture
def page(report_page, chromium_path):
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        context = browser.new_context(offline=True, viewport={"width": 1200, "height": 900})
        page = context.new_page()
        page.problems, page.requests = [], []
        page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: page.problems.append(str(error)))
        page.on("request", lambda request: page.requests.append(request.url))
        page.goto(report_page.as_uri())
        yield page
        browser.close()


def _canvas(page, name):
    return page.evaluate(f"document.getElementById('{name}').toDataURL()")


def test_the_page_is_self_contained_and_loads_without_errors(page, report_page):
    text = report_page.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    assert page.problems == []
    assert all(url.startswith(("file:", "data:")) for url in page.requests), page.requests
    assert page.locator("#table").text_content().startswith("Validation MSE")
    assert page.locator("img").count() == 4  # the demo's figures, embedded
    assert page.evaluate("[...document.images].every((img) => img.naturalWidth > 200)")


def test_the_slider_changes_the_curve_and_the_heatmap(page):
    before = (_canvas(page, "fit"), _canvas(page, "heatmap"))
    h_before = page.locator("#h-value").text_content()
    page.locator("#bandwidth").fill("2")
    after = (_canvas(page, "fit"), _canvas(page, "heatmap"))
    assert page.locator("#h-value").text_content() != h_before
    assert after[0] != before[0] and after[1] != before[1]
    page.select_option("#kernel", "boxcar")
    assert _canvas(page, "fit") != after[0]
    assert page.problems == []


def test_screenshots_are_not_blank(page, tmp_path):
    for name in ("fit", "heatmap"):
        path = tmp_path / f"{name}.png"
        page.locator(f"#{name}").screenshot(path=str(path))
        with Image.open(path) as image:
            colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
        assert len(colours) > 20, name  # curves, points and weights, not an empty canvas
        white = max(count for count, colour in colours if colour == (255, 255, 255))
        assert white < 0.98 * sum(count for count, _ in colours)


def test_report_command_writes_one_file_and_rejects_a_directory(tmp_path):
    run = [sys.executable, "-m", "attnpool", "report"]
    result = subprocess.run([*run, "--out", str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "expected an HTML file name" in result.stderr
    assert list(tmp_path.iterdir()) == []
