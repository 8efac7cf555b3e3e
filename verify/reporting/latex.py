"""Text from a report made safe for LaTeX: plain text escaped, inline mathematics admitted only
from a small vocabulary.

A report is read like any input (it may be edited by hand), so nothing in it reaches LaTeX as
commands except what this module admits.  :func:`escape` turns every special character of plain
text into its printable form.  :func:`text` keeps the segments between dollar signs as
mathematics when each passes :func:`safe_math` -- letters, digits, operators, balanced braces
and the control words of :data:`MATH_WORDS` (no ``%``, ``#``, ``&``, ``~``, no other command; an
argument after ``^`` and ``_``, a brace after a font) -- and otherwise escapes the whole string
as text, so that a report can neither run commands nor stop the paper from compiling.

>>> text(r"with $\\lVert I - RA \\rVert_F < 1$ in Arb")
'with $\\\\lVert I - RA \\\\rVert_F < 1$ in Arb'
>>> text(r"$\\input{/etc/passwd}$")
'\\\\$\\\\textbackslash{}input\\\\{/etc/passwd\\\\}\\\\$'
"""

from __future__ import annotations

import re
from typing import Any

_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
            # in the default OT1 text font these three print as an em dash and inverted ! and ?
            "|": r"\textbar{}", "<": r"\textless{}", ">": r"\textgreater{}"}

# amsmath and amssymb provide every one of these; none reads a file, defines or expands anything
MATH_WORDS = frozenset("""
    alpha beta gamma delta epsilon lambda mu pi rho sigma tau phi Phi Sigma Lambda infty partial nabla
    lVert rVert lvert rvert le ge leq geq ne neq approx times cdot circ pm top in notin subset to mapsto
    sup inf max min exp log det dim sum prod ldots dots mathbb mathfrak mathrm mathcal
""".split())
_MATH_TOKEN = re.compile(r"\\[A-Za-z]+|\\[,;!]|[A-Za-z0-9 +\-*/=<>()\[\].,:;'!|^_{}]")
_FONTS = (r"\mathbb", r"\mathfrak", r"\mathrm", r"\mathcal")
MAX_MATH = 200  # characters in one segment; the suite's own are under 100


def escape(value: Any) -> str:
    """Plain text made safe for LaTeX: every special character printed as itself."""
    return "".join(_SPECIAL.get(ch, ch) for ch in str(value))


def safe_math(segment: str) -> bool:
    """Whether ``segment`` (without its dollar signs) uses only the admitted vocabulary, with
    balanced braces."""
    if not segment.strip() or len(segment) > MAX_MATH:
        return False
    pos, depth, need = 0, 0, ""  # need: what the previous token requires next ("{" after a font, an argument after ^ _)
    for tok in _MATH_TOKEN.finditer(segment):
        word = tok.group()
        if tok.start() != pos or (word.startswith("\\") and word[1:].isalpha() and word[1:] not in MATH_WORDS):
            return False
        if (need == "{" and word != "{") or (need == "argument" and (word in "^_} " or word in _FONTS)):
            return False
        need = "{" if word in _FONTS else "argument" if word in ("^", "_") else ""
        depth += (word == "{") - (word == "}")
        if depth < 0:
            return False
        pos = tok.end()
    return pos == len(segment) and depth == 0 and not need


def text(value: Any) -> str:
    """Text with inline mathematics: each ``$...$`` segment kept when every one is
    :func:`safe_math`, the rest escaped; otherwise the whole string escaped as plain text."""
    parts = str(value).split("$")
    if len(parts) % 2 == 0 or not all(safe_math(m) for m in parts[1::2]):
        return escape(value)
    return "".join(escape(p) if i % 2 == 0 else f"${p}$" for i, p in enumerate(parts))


_PLAIN_WORDS = {"lVert": "||", "rVert": "||", "lvert": "|", "rvert": "|", "le": "<=", "leq": "<=", "ge": ">=",
                "geq": ">=", "ne": "!=", "neq": "!=", "top": "T", "times": "x", "cdot": "*", "to": "->", "mapsto": "->",
                "infty": "inf", "ldots": "...", "dots": "...", "approx": "~", "pm": "+-", ",": " ", ";": " ",
                "!": ""}


def plain(value: Any) -> str:
    """Text with its admitted mathematics (as :func:`text` would typeset it) written as plain
    text for a terminal or Markdown: dollar signs and braces dropped, fonts read as their letters,
    control words as their names or symbols (``\\lVert`` as ``||``, ``\\tau`` as ``tau``).

    >>> plain(r"$V_0, V_1$ generate $\\mathfrak{gl}(d)$; $\\lVert I - RA \\rVert_F < 1$")
    'V_0, V_1 generate gl(d); || I - RA ||_F < 1'
    >>> plain("50% of $x")  # not mathematics: unchanged
    '50% of $x'
    """
    parts = str(value).split("$")
    if len(parts) % 2 == 0 or not all(safe_math(m) for m in parts[1::2]):
        return str(value)
    def words(m: re.Match[str]) -> str:
        w = m.group()[1:]
        return "" if "\\" + w in _FONTS else _PLAIN_WORDS.get(w, w)
    math = (re.sub(r"\\[A-Za-z]+|\\[,;!]", words, p).replace("{", "").replace("}", "") for p in parts[1::2])
    return "".join(p if i % 2 == 0 else next(math) for i, p in enumerate(parts))
