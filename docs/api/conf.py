"""Sphinx configuration of the API reference (``make docs``): autodoc reads the docstrings of
verify.api and of the types it returns; warnings are errors (``-W``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from verify.version import __version__  # noqa: E402

project = "attention-interpolation-verify"
author = "The attention-interpolation-verify authors"
release = version = __version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": False}
html_theme = "alabaster"
# the navigation (the pages) in the sidebar; the default "about" box wrapped the long project name over three lines
html_sidebars = {"**": ["navigation.html", "relations.html", "searchbox.html"]}
html_title = f"{project} {release}: API reference"
html_static_path: list[str] = []
exclude_patterns = ["_build"]
