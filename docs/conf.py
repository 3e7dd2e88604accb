"""Sphinx configuration of attnpool's documentation (``make docs``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("JAX_ENABLE_X64", "1")

import attnpool  # noqa: E402

project = "attnpool"
author = "The attnpool developers"
copyright = "2026, the attnpool developers"
release = attnpool.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax from the package, into _static: no CDN
    "sphinx_copybutton",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_parser",
    "cli_reference",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_ext", "images/README.md"]
templates_path = ["_templates"]

# The API reference: one page per public object, generated from the docstrings.
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# Markdown pages (the guide, the design notes, the benchmarks, the changelog).
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# The gallery: examples/ runs when the docs build, its figures kept in the pages.
sphinx_gallery_conf = {
    "examples_dirs": str(HERE.parent / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "reset_modules": ("matplotlib",),
    "show_memory": False,
    "show_signature": False,
    # the timing page loads jQuery and DataTables from a CDN: the site stays offline
    "write_computation_times": False,
}

# Copy buttons that leave the prompts and the output behind.
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True

# Offline builds: no inventories are fetched; the mapping names what links would go to.
intersphinx_mapping: dict[str, tuple[str, str | None]] = {}

html_theme = "pydata_sphinx_theme"
html_title = f"attnpool {release}"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False

# Warnings are errors (make docs passes -W): a reference that does not resolve fails.
nitpicky = False
suppress_warnings: list[str] = []
