"""Area bounds and apart pairs as text: the command line's ``--area``/``--apart`` and sessions.

``"1:0.2-0.3"`` bounds label 1 to 20-30% of the image; ``"2:5000px-9000px"`` bounds label 2 to
5000-9000 pixels; ``"1,3"`` keeps labels 1 and 3 apart. :meth:`solver.mrf.AreaBound.describe`
writes the same forms.
"""

from __future__ import annotations

import math

from solver.mrf import AreaBound


def parse_area(text: str) -> AreaBound:
    """An area bound from ``"K:LO-HI"`` (fractions in [0, 1], or both with a ``px`` suffix).

    Raises
    ------
    ValueError
        One line naming what is wrong with ``text``.
    """
    head, sep, span = str(text).strip().partition(":")
    if not sep:
        raise ValueError(f"area bound {text!r}: expected K:LO-HI, e.g. 1:0.2-0.3 or "
                         f"2:5000px-9000px")
    try:
        label = int(head)
    except ValueError:
        raise ValueError(f"area bound {text!r}: label {head!r} is not a whole number") from None
    lo_text, sep, hi_text = span.partition("-")
    if not sep or not lo_text or not hi_text:
        raise ValueError(f"area bound {text!r}: expected LO-HI after the label, e.g. 0.2-0.3")
    px = [v.strip().lower().endswith("px") for v in (lo_text, hi_text)]
    if px[0] != px[1]:
        raise ValueError(f"area bound {text!r}: give both bounds as fractions or both in px")
    values = []
    for v in (lo_text, hi_text):
        v = v.strip()
        v = v[:-2] if px[0] else v
        try:
            values.append(float(v))
        except ValueError:
            raise ValueError(f"area bound {text!r}: {v!r} is not a number") from None
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"area bound {text!r}: bounds must be finite numbers")
    return AreaBound(label, values[0], values[1], "px" if px[0] else "fraction")


def parse_apart(text: str) -> tuple[int, int]:
    """An apart pair from ``"A,B"``.

    Raises
    ------
    ValueError
        One line naming what is wrong with ``text``.
    """
    parts = str(text).replace(" ", "").split(",")
    if len(parts) != 2:
        raise ValueError(f"apart pair {text!r}: expected two labels A,B, e.g. 1,3")
    try:
        a, b = (int(v) for v in parts)
    except ValueError:
        raise ValueError(f"apart pair {text!r}: labels must be whole numbers") from None
    return a, b
