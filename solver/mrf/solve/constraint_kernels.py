"""Compiled (numba) kernel of the apart pairs' rows for ADMM's pair split
(:func:`solver.mrf.solve.constraint_terms.apart_split`): a pass to count and a pass to fill,
over the neighbouring pairs the last split had (a restriction only fixes more pixels), in place
of some twenty array passes over every pair of the image for each of early fixing's
restrictions."""

from __future__ import annotations

import numpy as np

from solver.backend.jit import jit


@jit
def pair_split_rows(pos, edges, active, deg, most, free, hard, k, pairs):  # pragma: no cover
    """The rows of the apart pairs ``(pair_a[t], pair_b[t])`` (``pairs = (pair_a, pair_b)``)
    over the free variables.

    ``pos[i]`` is pixel ``i``'s place among the free pixels (-1: fixed), ``edges = (p, q)``
    every ordered neighbouring pair, ``active`` (increasing) the pairs to look at (at least those
    with a free end), ``deg`` each pixel's neighbours, ``most`` the largest degree, ``free``
    the free pixels in order, ``hard`` each pixel's fixed label (1-based, 0 = free).
    Per apart pair ``t``, in this order: the rows ``x_pa + x_qb <= 1`` of the pairs with both
    ends free; the rows on one entry where ``q`` (then ``p``) is fixed (bound 0 where it is
    fixed to the partner label, else 1); then ``most - deg`` rows ``x_ia <= 1`` (then ``x_ib``)
    for each free pixel, so that every free variable of a pair's label is in ``most`` rows per
    pair. Pairs keep their order among all pairs. Returns ``(first, second, bounds, keys,
    counts, with_free, kinds, layout)``: the variables (second -1 where a row has one entry),
    bounds, two keys a row naming its entries the same way in every restriction (-1 for a
    missing second), the rows each label's variables are in, the pairs with a free end (for the
    next restriction's ``active``), each one's kind (0 both ends free, 1 only ``p``, 2 only
    ``q``) and the block sizes ``(both, p only, q only, padding)`` of one apart pair's rows
    (the last two for :func:`carry_sources`)."""
    p, q = edges
    pair_a, pair_b = pairs
    total = p.size
    npairs = pair_a.size
    big = 2 * total * npairs
    with_free = np.empty(active.size, np.int64)
    kinds = np.empty(active.size, np.int8)
    nfree = 0
    nboth = 0
    nside = np.zeros(2, np.int64)
    for m in range(active.size):
        e = active[m]
        fp, fq = pos[p[e]] >= 0, pos[q[e]] >= 0
        if fp or fq:
            with_free[nfree] = e
            kinds[nfree] = 0 if fp and fq else (1 if fp else 2)
            nfree += 1
            if fp and fq:
                nboth += 1
            elif fp:
                nside[0] += 1
            else:
                nside[1] += 1
    npad = 0
    for m in range(free.size):
        npad += most - deg[free[m]]
    per = nboth + nside[0] + nside[1] + 2 * npad  # rows of one apart pair
    rows = npairs * per
    first = np.empty(rows, np.int64)
    second = np.full(rows, -1, np.int64)
    bounds = np.ones(rows)
    keys = np.full((rows, 2), -1, np.int64)
    counts = np.zeros(k)
    for t in range(npairs):
        counts[pair_a[t]] += most
        counts[pair_b[t]] += most
    at = np.empty((npairs, 3), np.int64)  # each pair's next row of each kind
    for t in range(npairs):
        at[t, 0] = t * per
        at[t, 1] = t * per + nboth
        at[t, 2] = t * per + nboth + nside[0]
    for m in range(nfree):
        e = with_free[m]
        pp, qq = p[e], q[e]
        kind = kinds[m]
        for t in range(npairs):
            a, b = pair_a[t], pair_b[t]
            key = (e * npairs + t) * 2
            if kind == 0:
                r = at[t, 0]
                first[r] = pos[pp] * k + a
                second[r] = pos[qq] * k + b
                keys[r, 0] = key
                keys[r, 1] = key + 1
                at[t, 0] += 1
            elif kind == 1:
                r = at[t, 1]
                first[r] = pos[pp] * k + a
                bounds[r] = 0.0 if hard[qq] == b + 1 else 1.0
                keys[r, 0] = key
                at[t, 1] += 1
            else:
                r = at[t, 2]
                first[r] = pos[qq] * k + b
                bounds[r] = 0.0 if hard[pp] == a + 1 else 1.0
                keys[r, 0] = key + 1
                at[t, 2] += 1
    for t in range(npairs):
        r = t * per + nboth + nside[0] + nside[1]
        for side in range(2):
            lab = pair_a[t] if side == 0 else pair_b[t]
            for m in range(free.size):
                i = free[m]
                for no in range(most - deg[i]):
                    first[r] = pos[i] * k + lab
                    keys[r, 0] = big + ((i * most + no) * npairs + t) * 2 + side
                    r += 1
    layout = np.array([nboth, nside[0], nside[1], npad], np.int64)
    return first, second, bounds, keys, counts, with_free[:nfree], kinds[:nfree], layout


@jit
def carry_sources(parent, child, deg, most, npairs):  # pragma: no cover
    """For each entry of a restriction's split (two a row, as its ``keys``), the entry of its
    parent's split with the same key (-1 for a missing second entry): both splits as
    :func:`pair_split_rows` made them (``parent`` and ``child`` each ``(with_free, kinds,
    layout, free)``), the restriction's free pixels and pairs with a free end
    a subset of the parent's. Every entry of the restriction is in the parent (an end free now
    was free then), so one merge of the two pair lists and of the two pixel lists finds them,
    where a sort and a search of the keys did."""
    with_free_p, kinds_p, layout_p, free_p = parent
    with_free_c, kinds_c, layout_c, free_c = child
    def offsets(layout):
        per = layout[0] + layout[1] + layout[2] + 2 * layout[3]
        return per, layout[0], layout[0] + layout[1], layout[0] + layout[1] + layout[2]

    per_p, side1_p, side2_p, pad_p = offsets(layout_p)
    per_c, side1_c, side2_c, pad_c = offsets(layout_c)
    src = np.full(2 * npairs * per_c, -1, np.int64)
    # each parent pair's place within its kind's block
    rank_p = np.empty(with_free_p.size, np.int64)
    seen = np.zeros(3, np.int64)
    for m in range(with_free_p.size):
        rank_p[m] = seen[kinds_p[m]]
        seen[kinds_p[m]] += 1
    start_p = np.array([0, side1_p, side2_p], np.int64)
    start_c = np.array([0, side1_c, side2_c], np.int64)
    seen[:] = 0
    mp = 0
    for mc in range(with_free_c.size):
        e = with_free_c[mc]
        while with_free_p[mp] != e:
            mp += 1
        kc, kp = kinds_c[mc], kinds_p[mp]
        rc = seen[kc]
        seen[kc] += 1
        for t in range(npairs):
            row_c = t * per_c + start_c[kc] + rc
            row_p = t * per_p + start_p[kp] + rank_p[mp]
            if kc == 0:  # both ends free now, so then: the same two entries
                src[2 * row_c] = 2 * row_p
                src[2 * row_c + 1] = 2 * row_p + 1
            elif kc == 1:  # the p end's entry: first in the parent's row of either kind
                src[2 * row_c] = 2 * row_p
            else:  # the q end's: second in a row with both, first in a row of q only
                src[2 * row_c] = 2 * row_p + (1 if kp == 0 else 0)
    # the padding rows, pixel by pixel in both
    mp = 0
    before_p = 0  # the parent's padding rows before pixel free_p[mp]
    before_c = 0
    for mc in range(free_c.size):
        i = free_c[mc]
        while free_p[mp] != i:
            before_p += most - deg[free_p[mp]]
            mp += 1
        for t in range(npairs):
            for side in range(2):
                base_c = t * per_c + pad_c + side * layout_c[3] + before_c
                base_p = t * per_p + pad_p + side * layout_p[3] + before_p
                for no in range(most - deg[i]):
                    src[2 * (base_c + no)] = 2 * (base_p + no)
        before_c += most - deg[i]
    return src
