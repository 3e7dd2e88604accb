"""The documentation's link check (docs/check_links.py) on small built sites."""

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "check_links", Path(__file__).parents[1] / "docs" / "check_links.py"
)
check_links = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(check_links)


@pytest.fixture
def site(tmp_path):
    (tmp_path / "guide").mkdir()
    (tmp_path / "_static").mkdir()
    (tmp_path / "picture.png").write_bytes(b"png")
    (tmp_path / "guide" / "page.html").write_text(
        '<h1 id="top">Page</h1><a name="old-anchor"></a><a href="../index.html#intro">up</a>'
    )
    (tmp_path / "_static" / "template.html").write_text('<a href="{{ pathto(x) }}">theme</a>')
    return tmp_path


def write_index(site, body):
    (site / "index.html").write_text(f'<section id="intro">{body}</section>')


def test_a_site_whose_links_resolve_passes(site):
    write_index(
        site,
        '<a href="guide/page.html#top">x</a><a href="guide/page.html#old-anchor">y</a>'
        '<a href="#intro">z</a><img src="picture.png"><a href="guide/">dir</a>'
        '<a href="https://example.org/missing">external</a><a href="mailto:a@b">mail</a>',
    )
    (site / "guide" / "index.html").write_text("<p>guide</p>")
    assert check_links.broken_links(site) == []
    assert check_links.main(["check_links", str(site)]) == 0


def test_missing_files_anchors_and_images_are_reported(site, capsys):
    write_index(
        site,
        '<a href="guide/gone.html">a</a><a href="guide/page.html#nowhere">b</a>'
        '<img src="images/missing.png"><a href="#also-nowhere">c</a>',
    )
    broken = check_links.broken_links(site)
    assert broken == [
        "index.html: guide/gone.html (no such file)",
        "index.html: guide/page.html#nowhere (no such anchor)",
        "index.html: images/missing.png (no such file)",
        "index.html: #also-nowhere (no such anchor)",
    ]
    assert check_links.main(["check_links", str(site)]) == 1
    assert "guide/gone.html" in capsys.readouterr().out


def test_a_folder_without_a_built_site_fails(tmp_path, capsys):
    assert check_links.main(["check_links", str(tmp_path)]) == 1
    assert "no built site" in capsys.readouterr().err
