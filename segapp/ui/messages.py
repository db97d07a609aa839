"""The library's one-line errors as sentences for a person, in the app's words.

The solver and the pipeline raise one-line errors written for the command line: lower case, no
full stop, the CLI's option names (``--area``, ``--solver expansion``) and its forms
(``area bound 1:0.2-0.3``). A dialog of the app says the same thing as a sentence: a capital
first letter, a full stop, the app's names for what the person set (the Constraints tab's
bounds, in the unit the person typed them in), e.g.

    area bound on label 1: its strokes and hard constraints cover 3120 pixels, more than its
    upper bound 26

for a maximum of 0.01 % becomes

    The area bound on label 1: its strokes and hard constraints cover 3,120 pixels (1.19 % of
    the image), more than its upper bound of 0.01 % of the image (26 pixels).

Qt-free (the dialogs that show these sentences are the callers'); any dialog of the app may use
:func:`person_sentence`.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

#: The command line's words and the app's, replaced in this order (longest first where one
#: contains another).
APP_WORDS: tuple[tuple[str, str], ...] = (
    ("use --solver expansion", "use α-expansion"),
    ("--no-reference", "without the reference (Parameters: untick “compute reference”)"),
    ("--area", "the area bounds (Constraints tab)"),
    ("--apart", "the labels that must not touch (Constraints tab)"),
    ("--max-iter", "max iterations"),
    ("--solver", "the solver"),
    ("--backend", "the backend"),
    ("--lambda", "λ"),
    ("--lam", "λ"),
    ("--beta", "β"),
    ("--k", "K"),
    ("ADMM parameter max_iter", "ADMM's max iterations"),
    ("ADMM parameter rho0", "ADMM's ρ₀"),
    ("ADMM parameter rho_growth", "ADMM's ρ growth"),
    ("ADMM parameter gamma", "ADMM's γ"),
    ("ADMM parameter tol", "ADMM's tolerance"),
    ("apart pairs", "“must not touch” pairs"),
)

_WORD_RES: tuple[tuple[re.Pattern[str], object], ...] = (
    (re.compile(r"\bk must be\b"), "K must be"),
    (re.compile(r"\blambda\b"), "λ"),
    (re.compile(r"\bbeta\b"), "β"),
    # any other option of the command line: its name, in words ("--pcg-tol" → "pcg tol")
    (re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)"),
     lambda m: m.group(1).replace("-", " ")),
)

#: ``area bound 1:0.2-0.3`` or ``area bound 2:5000px-9000px`` in a library error.
_AREA_FORM = re.compile(r"area bound (\d+):([0-9.eE+-]+?)(px)?-([0-9.eE+-]+?)(px)?(?=[:\s,;)]|$)")
#: ``apart pair 1,3`` in a library error.
_APART_FORM = re.compile(r"apart pair (\d+),(\d+)")
#: ``... its upper bound 0`` / ``... its lower bound 52429`` after ``area bound on label C``.
_BOUND_ON = re.compile(r"^(the )?area bound on label (\d+): (.*)\bits (upper|lower) bound (\d+)(.*)$")
#: ``the area bounds cannot all hold: their lower bounds add up to N pixels, more than ...``
_SUMS = re.compile(r"^the area bounds cannot all hold: their (lower|upper) bounds add up to "
                   r"(\d+) pixels, (more|fewer) than the image's (\d+)$")
#: ``N pixels`` in a library error (numbers of pixels get thousands separators).
_PIXELS = re.compile(r"\b(\d{4,}) pixels\b")


def percent_text(fraction: float) -> str:
    """A fraction of the image as the Constraints tab shows it: ``0.0001`` → ``"0.01 %"``,
    ``0.25`` → ``"25 %"`` (at most four decimals, trailing zeros dropped)."""
    text = f"{fraction * 100:.4f}".rstrip("0").rstrip(".")
    return f"{text or '0'} %"


def _share(count: int, n_pixels: int) -> str:
    """A measured share of the image, three significant digits: ``"1.19 %"``."""
    return f"{100.0 * count / n_pixels:.3g} %"


def _pixels_text(n: float) -> str:
    n = int(round(n))
    return f"{n:,} pixel{'s' if n != 1 else ''}"


def _area_form(m: re.Match[str]) -> str:
    label, lo, px, hi = m.group(1), m.group(2), m.group(3) or m.group(5), m.group(4)
    try:
        a, b = float(lo), float(hi)
    except ValueError:
        return m.group(0)
    if px:
        span = f"{int(a):,}–{int(b):,} pixels"
    else:
        span = f"{percent_text(a)[:-2]}–{percent_text(b)} of the image"
    return f"area bound on label {label} ({span})"


def in_units(text: str, bounds: Iterable = (), n_pixels: int | None = None) -> str:
    """``text`` with the area bounds it names in the unit the person gave them in.

    Parameters
    ----------
    text : str
        A library error.
    bounds : iterable of solver.mrf.AreaBound
        The bounds the person set (their ``unit``: ``"fraction"``, shown in %, or ``"px"``).
    n_pixels : int, optional
        The image's pixel count (a pixel count is then also given in % where the bound was).

    Returns
    -------
    str
        ``"... its upper bound 0"`` on a label bounded in % becomes ``"... its upper bound of
        0.01 % of the image (26 pixels)"``; ``"area bound 1:0.0001-0.2"`` becomes ``"area bound
        on label 1 (0.01–20 % of the image)"``.
    """
    by_label = {int(b.label): b for b in bounds}
    text = _AREA_FORM.sub(_area_form, text)
    text = _APART_FORM.sub(lambda m: f"“must not touch” pair {m.group(1)} and {m.group(2)}",
                           text)
    m = _BOUND_ON.match(text)
    if m is not None:
        the, label, head, side, value, tail = m.groups()
        bound = by_label.get(int(label))
        name = f"{side} bound"
        if bound is not None and bound.unit == "fraction":
            given = bound.hi if side == "upper" else bound.lo
            limit = f"{percent_text(given)} of the image ({_pixels_text(float(value))})"
            if n_pixels:
                head = _PIXELS.sub(lambda p: f"{int(p.group(1)):,} pixels "
                                   f"({_share(int(p.group(1)), n_pixels)} of the image)", head)
        else:
            limit = _pixels_text(float(value))
        text = f"{the or ''}area bound on label {label}: {head}its {name} of {limit}{tail}"
    m = _SUMS.match(text)
    if m is not None:
        side, total, rest, n = m.groups()
        name = f"{side} bounds"
        share = (f" ({_share(int(total), n_pixels)} of the image)"
                 if n_pixels and any(b.unit == "fraction" for b in by_label.values()) else "")
        text = (f"the area bounds cannot all hold: their {name} add up to {int(total):,} "
                f"pixels{share}, {rest} than the image's {int(n):,} pixels")
    return _PIXELS.sub(lambda p: f"{int(p.group(1)):,} pixels", text)


def person_sentence(text: str, bounds: Iterable = (), n_pixels: int | None = None) -> str:
    """A library's one-line error as a sentence for a person.

    Parameters
    ----------
    text : str
        The error's text (its first line is taken).
    bounds, n_pixels
        The person's area bounds and the image's pixel count, for :func:`in_units`.

    Returns
    -------
    str
        Capital first letter, a full stop (unless it ends in ``.``, ``?`` or ``!``), the
        command line's option names replaced by the app's words (:data:`APP_WORDS`), area
        bounds in the person's unit; ``""`` for an empty text.
    """
    lines = str(text).strip().splitlines()
    line = lines[0].strip() if lines else ""
    if not line:
        return ""
    for cli, app in APP_WORDS:  # (whole names only: --k is not the start of --keep)
        line = re.sub(re.escape(cli) + r"(?![\w-])", app.replace("\\", "\\\\"), line)
    for pattern, app in _WORD_RES:
        line = pattern.sub(app, line)
    line = in_units(line, bounds, n_pixels)
    if line.startswith(("area bound", "“must not touch”")):
        line = "the " + line
    if line[0].isascii():  # (a Greek name keeps its case: λ is not Λ)
        line = line[0].upper() + line[1:]
    if line[-1] not in ".?!":
        line += "."
    return line


def exception_sentence(exc: BaseException, bounds: Iterable = (),
                       n_pixels: int | None = None) -> str:
    """:func:`person_sentence` of an exception's message (its type's name where it has none)."""
    return person_sentence(str(exc) or type(exc).__name__, bounds, n_pixels)


__all__ = ["APP_WORDS", "exception_sentence", "in_units", "percent_text", "person_sentence"]
