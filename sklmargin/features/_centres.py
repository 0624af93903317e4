r"""Centre selection ("import vectors") for the Nyström approximation of the RBF kernel.

Nyström approximates :math:`k(x, x') = \exp(-\gamma \lVert x - x' \rVert^2)` through
its values on a few centres :math:`c_1, \dots, c_M`; which centres are taken decides
how good the approximation is at a given width :math:`M`. Every selector here works
on the *distinct* rows of the training data, each carrying the total sample weight
of its copies, in the order of a hash of their content
(:mod:`sklmargin.features._row_keys`): an integer sample weight is then exactly
equivalent to repeating a row, and the result does not depend on the order of the
rows. The order follows a key that round-off of a row rarely changes (the row's
direction and norm on a coarse grid), and the uniform draw gives each row its own
random number from that key: a 2-ulp change of the data then leaves the centres as
they were but for about one row in 25,000 (a draw in the order of a hash of the
rows' bytes would draw other centres). Because the order, the draws and the weights
come from the rows' hashes, a chunked (Dask) fit reproduces the in-memory choice
from per-chunk ``(hash, weight)`` pairs and fetches only the rows chosen
(:func:`choose_centres`), and an array API fit makes it on a host copy. The
kernel values the adaptive selectors need come from
:func:`~sklmargin.features._kernel_block.rbf_kernel_block`.

Selectors (all weight-proportional):

* ``"uniform"``: a weighted draw without replacement (Williams & Seeger 2001).
* ``"kmeans++"``: k-means++ seeding (Arthur & Vassilvitskii 2007), each row drawn
  with probability proportional to its weight times its squared distance to the
  nearest centre already chosen.
* ``"kmeans"``: the same seeding followed by a few weighted Lloyd steps; the centres
  are then cluster means, not data rows (Zhang, Tsang & Kwok 2008).
* ``"rpcholesky"``: randomly pivoted Cholesky (Chen, Epperly, Tropp & Webber 2023),
  each pivot drawn with probability proportional to its weight times the residual
  diagonal of the kernel matrix, in blocks.

With at most ``n_centres`` distinct rows every selector returns all of them: the
approximation is then the exact kernel machine.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import solve_triangular

from ._kernel_block import rbf_kernel_block
from ._row_keys import distinct_row_hashes, draw_salt, keyed_priority, stable_row_keys

# Weighted Lloyd steps after the k-means++ seeding of the "kmeans" selector.
_LLOYD_STEPS = 5
# The "kmeans" selector seeds on at most this many rows per centre (a
# weight-proportional draw), then runs its Lloyd steps on all of them: the
# seeding is sequential (one pass over its rows per centre), the Lloyd steps
# are GEMMs.
_SEED_ROWS_PER_CENTRE = 8
# Rows per block of a Lloyd step's distances: a block (rows x centres, float64)
# small enough to be read back from cache by the argmin, not from memory (the
# GEMM's inner dimension is only the number of features, so with larger blocks
# writing and reading the distances through memory is most of the step).
_LLOYD_BLOCK_ROWS = 256


def uniform_indices(weights, n_centres, rng, keys=None):
    r"""Draw the sorted indices of ``n_centres`` rows, ∝ weight, without replacement.

    Successive weighted sampling by exponential races (Efraimidis & Spirakis
    2006): row :math:`i` gets the key :math:`E_i / w_i` with
    :math:`E_i \sim \mathrm{Exp}(1)`; the ``n_centres`` smallest keys win. This is
    the same law as drawing one row at a time with probability ∝ weight among
    those not yet drawn, in one vectorised pass.

    :math:`E_i` is a function of the row's own stable key
    (:func:`~sklmargin.features._row_keys.stable_row_keys`) and of one 63-bit
    salt drawn from ``rng``:
    :math:`E_i = -\log U_i` with :math:`U_i` the 53 high bits of
    ``splitmix64(key_i ^ salt)``. A row's draw then does not depend on the
    other rows, nor on its position: a row whose key round-off changed (about
    one in 25,000) is drawn afresh and every other row keeps its draw, so the
    centres move by at most that row. (Exponentials drawn in the order of the
    rows would move every row after it.) It needs the weights and keys only,
    so a chunked fit draws the same indices from gathered ``(hash, weight)``
    pairs.

    Parameters
    ----------
    weights : ndarray of shape (n_distinct,)
        Positive weights, in the canonical order of the rows.
    n_centres : int
        Number of rows to draw, ``< n_distinct``.
    rng : numpy.random.RandomState
        Source of the salt.
    keys : ndarray of shape (n_distinct,) and dtype uint64, default=None
        The rows' stable keys; None numbers the rows ``0, 1, ...`` instead
        (a draw that depends on the order of the rows).

    Returns
    -------
    indices : ndarray of shape (n_centres,)
    """
    return np.sort(race_order(weights, rng, keys)[:n_centres])


def race_order(weights, rng, keys=None):
    """All rows in the order of :func:`uniform_indices`' race, winners first.

    Its first ``n`` entries are the rows a uniform draw of ``n`` centres
    takes (:func:`uniform_indices` sorts them), whatever ``n``: the draws of
    all widths are nested, which a data-chosen width
    (:mod:`sklmargin.features._width`) grows along. One salt is drawn from
    ``rng``, as :func:`uniform_indices` draws it.
    """
    if keys is None:
        keys = np.arange(weights.shape[0], dtype=np.uint64)
    bits = keyed_priority(keys, draw_salt(rng)) >> np.uint64(11)
    uniform = (bits.astype(np.float64) + 0.5) * 2.0**-53
    race = -np.log(uniform) / weights
    # Ties (distinct rows sharing a key and weight) go to the first in the
    # canonical order: a stable sort, not argpartition's arbitrary pick.
    return np.argsort(race, kind="stable")


def uniform_centres(rows, weights, n_centres, gamma, rng, keys=None):
    r"""Draw ``n_centres`` rows without replacement, with probability ∝ weight.

    The rows at :func:`uniform_indices`, each row's draw seeded by its stable
    key (:func:`~sklmargin.features._row_keys.stable_row_keys`).

    Parameters
    ----------
    rows : ndarray of shape (n_distinct, n_features)
        Distinct rows (see
        :func:`~sklmargin.features._row_keys.distinct_row_hashes`).
    weights : ndarray of shape (n_distinct,)
        Positive weights.
    n_centres : int
        Number of centres, ``< n_distinct``.
    gamma : float
        Unused (the signature is shared by all selectors).
    rng : numpy.random.RandomState
        Source of randomness.
    keys : ndarray of shape (n_distinct,) and dtype uint64, default=None
        The rows' stable keys when computed already (the fit's hashes hold
        them); None computes them.

    Returns
    -------
    centres : ndarray of shape (n_centres, n_features)
    """
    keys = stable_row_keys(rows) if keys is None else keys
    return rows[uniform_indices(weights, n_centres, rng, keys)]


def _kmeans_plusplus_indices(rows, weights, n_centres, rng):
    """Return the indices of weighted k-means++ seeds (one candidate per step)."""
    n_rows = rows.shape[0]
    rows64 = rows.astype(np.float64, copy=False)
    squared_norms = np.einsum("ij,ij->i", rows64, rows64)
    chosen = np.empty(n_centres, dtype=np.intp)
    chosen[0] = rng.choice(n_rows, p=weights / weights.sum())
    nearest = np.full(n_rows, np.inf)
    for k in range(n_centres):
        if k > 0:
            # Draw proportional to weight times squared distance to the nearest seed;
            # chosen rows have distance 0 and cannot be drawn twice.
            score = weights * nearest
            total = score.sum()
            if not total > 0:  # fewer distinct points than seeds (callers avoid it)
                return chosen[:k]
            chosen[k] = min(
                int(np.searchsorted(np.cumsum(score), rng.uniform() * total)),
                n_rows - 1,
            )
        centre = rows64[chosen[k]]
        distance = squared_norms - 2.0 * (rows64 @ centre) + centre @ centre
        np.maximum(distance, 0.0, out=distance)
        distance[chosen[k]] = 0.0
        np.minimum(nearest, distance, out=nearest)
    return chosen


def kmeans_plusplus_centres(rows, weights, n_centres, gamma, rng, keys=None):
    r"""Weighted k-means++ seeding (Arthur & Vassilvitskii 2007).

    The first centre is drawn with probability ∝ :math:`w_i`, every next one with
    probability ∝ :math:`w_i\, D(x_i)^2`, :math:`D` the distance to the nearest
    centre so far. Seeds spread over the data and favour dense regions; they are
    data rows.

    Parameters
    ----------
    rows, weights, n_centres, gamma, rng
        As in :func:`uniform_centres`.
    keys : ignored
        The selectors' shared signature (:func:`choose_centres` passes them).

    Returns
    -------
    centres : ndarray of shape (n_centres, n_features)
    """
    return rows[np.sort(_kmeans_plusplus_indices(rows, weights, n_centres, rng))]


def kmeans_centres(rows, weights, n_centres, gamma, rng, keys=None):
    r"""Weighted k-means++ seeds refined by a few weighted Lloyd steps.

    With more than ``8 n_centres`` rows the seeds are chosen among ``8
    n_centres`` of them, drawn in proportion to weight by their stable keys
    (the seeding makes one pass over its rows per centre, which on large data
    costs more than the map); the Lloyd steps then move the seeds over all
    rows (:func:`lloyd_steps`). k-means centres minimise a bound on the Nyström
    error (Zhang, Tsang & Kwok 2008).

    Parameters
    ----------
    rows, weights, n_centres, gamma, rng, keys
        As in :func:`uniform_centres` (5 Lloyd steps, ``_LLOYD_STEPS``).

    Returns
    -------
    centres : ndarray of shape (n_centres, n_features)
        Cluster means, in the dtype of ``rows``.
    """
    pool = _SEED_ROWS_PER_CENTRE * n_centres
    if rows.shape[0] > pool:
        # Seeds from a draw of the rows (in proportion to weight, by their
        # stable keys: the same rows in any order), seeded unweighted.
        keys = stable_row_keys(rows) if keys is None else keys
        drawn = uniform_indices(weights, pool, rng, keys)
        seeds = drawn[
            _kmeans_plusplus_indices(rows[drawn], np.ones(pool), n_centres, rng)
        ]
    else:
        seeds = _kmeans_plusplus_indices(rows, weights, n_centres, rng)
    centres = lloyd_steps(rows, weights, rows[np.sort(seeds)], _LLOYD_STEPS)
    return centres.astype(rows.dtype, copy=False)


def lloyd_steps(rows, weights, centres, n_steps):
    r"""Move ``centres`` by ``n_steps`` weighted Lloyd steps over all ``rows``.

    Each step assigns every row to its nearest centre and moves each centre to
    the weighted mean :math:`c_k = \sum_{i \in k} w_i x_i / \sum_{i \in k} w_i`
    of its rows; a centre that loses all its rows stays where it is. Stops
    early at a fixed point.

    Parameters
    ----------
    rows : ndarray of shape (n_rows, n_features)
    weights : ndarray of shape (n_rows,)
        Positive weights.
    centres : ndarray of shape (n_centres, n_features)
        The starting centres.
    n_steps : int

    Returns
    -------
    ndarray of shape (n_centres, n_features), float64
    """
    centres = np.array(centres, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)  # (the sums are float64)
    n_rows, n_features = rows.shape
    # A block of rows with a column of ones, in float64: [x, 1] . [-2 c, |c|^2]
    # is |x - c|^2 - |x|^2 (constant per row, so the argmin is the nearest
    # centre's) in one GEMM, without elementwise passes over the distances.
    lifted = np.ones((min(n_rows, _LLOYD_BLOCK_ROWS), n_features + 1))
    labels = np.empty(n_rows, dtype=np.intp)
    for _ in range(n_steps):
        targets = np.empty((centres.shape[0], n_features + 1))
        targets[:, :n_features] = -2.0 * centres
        targets[:, n_features] = np.einsum("ij,ij->i", centres, centres)
        for start in range(0, n_rows, _LLOYD_BLOCK_ROWS):
            block = rows[start : start + _LLOYD_BLOCK_ROWS]
            part = lifted[: block.shape[0]]
            part[:, :n_features] = block
            labels[start : start + block.shape[0]] = np.argmin(part @ targets.T, 1)
        mass = np.bincount(labels, weights=weights, minlength=centres.shape[0])
        # Weighted cluster sums, a column at a time (no float64 copy of the
        # rows): each adds w_i x_ij over the rows in order.
        sums = np.empty_like(centres)
        for j in range(n_features):
            column = weights * rows[:, j]
            sums[:, j] = np.bincount(labels, column, minlength=centres.shape[0])
        moved = mass > 0
        new_centres = centres.copy()
        new_centres[moved] = sums[moved] / mass[moved, None]
        if np.array_equal(new_centres, centres):
            break
        centres = new_centres
    return centres


def rpcholesky_centres(
    rows, weights, n_centres, gamma, rng, block_size=None, keys=None
):
    r"""Centres chosen by blocked, weighted randomly pivoted Cholesky.

    Builds a low-rank factor :math:`F` with :math:`K \approx F F^\top` of the kernel
    matrix of the distinct rows. With :math:`d = \operatorname{diag}(K - F F^\top)`
    the residual diagonal (1 at the start: :math:`k(x, x) = 1`), each step draws a
    block of pivots i.i.d. with probability :math:`\propto w_i d_i` (a row of weight
    :math:`w` behaves like :math:`w` copies, all of which are explained once one is
    a pivot), evaluates the residual columns
    :math:`G = K_{:,S} - F F_{S,:}^\top`, factors the block's own residual
    :math:`G_{S,S} = L L^\top` by a Cholesky that skips pivots whose residual
    fell below :math:`100\,\varepsilon` on the way (near duplicates within a
    block), appends :math:`G_{:,S} L^{-\top}` to :math:`F` and subtracts its
    squared row norms from :math:`d` (Chen, Epperly, Tropp & Webber 2023,
    Algorithm 2 and the block variant of section 5). Cost
    :math:`O(n M^2 + n M d)`, memory one :math:`n \times M` factor in the dtype
    of ``rows``.

    Parameters
    ----------
    rows, weights, n_centres, gamma, rng
        As in :func:`uniform_centres`; ``gamma`` is the kernel coefficient.
    block_size : int, default=None
        Pivots drawn per block; None means ``ceil(n_centres / 10)`` capped at 100
        (small blocks keep the sampling adaptive, large ones use BLAS well).
    keys : ignored
        The selectors' shared signature (:func:`choose_centres` passes them).

    Returns
    -------
    centres : ndarray of shape (n_chosen, n_features)
        ``n_chosen <= n_centres``; fewer only when the residual vanished (the rows
        span the kernel numerically).

    References
    ----------
    .. [1] Y. Chen, E. N. Epperly, J. A. Tropp and R. J. Webber, "Randomly pivoted
       Cholesky: Practical approximation of a kernel matrix with few entry
       evaluations", Communications on Pure and Applied Mathematics, 2024.
       arXiv:2207.06503.
    """
    n_rows = rows.shape[0]
    dtype = rows.dtype
    if block_size is None:
        block_size = min(100, -(-n_centres // 10))
    # Below this residual a pivot is rounding noise (kernel diagonal = 1).
    noise = 100.0 * np.finfo(dtype).eps
    factor = np.empty((n_rows, n_centres), dtype=dtype)
    residual = np.ones(n_rows)
    pivots = []
    rank = 0
    while rank < n_centres:
        score = weights * residual
        total = score.sum()
        if not total > 0 or residual.max() <= noise:
            break
        draws = rng.choice(
            n_rows, size=min(block_size, n_centres - rank), p=score / total
        )
        # Keep the first occurrence of every drawn row, in draw order.
        _, first = np.unique(draws, return_index=True)
        block = draws[np.sort(first)]
        columns = rbf_kernel_block(rows, rows[block], gamma)
        if rank:
            columns -= factor[:, :rank] @ factor[block, :rank].T
        # Cholesky of the block's residual with rejection of dependent pivots.
        inner = columns[block].astype(np.float64)
        inner = (inner + inner.T) / 2.0
        accepted = []
        lower = np.zeros((len(block), len(block)))
        for j in range(len(block)):
            size = len(accepted)
            # Row j of the Cholesky factor against the pivots accepted so far.
            solved = solve_triangular(
                lower[:size, :size], inner[j, accepted], lower=True
            )
            pivot = inner[j, j] - solved @ solved
            if pivot > noise:
                lower[size, :size] = solved
                lower[size, size] = np.sqrt(pivot)
                accepted.append(j)
        residual[block] = 0.0
        if accepted:
            size = len(accepted)
            new = solve_triangular(
                lower[:size, :size],
                columns[:, accepted].T.astype(np.float64),
                lower=True,
            ).T
            residual -= np.einsum("ij,ij->i", new, new)
            np.maximum(residual, 0.0, out=residual)
            residual[block] = 0.0
            factor[:, rank : rank + size] = new
            rank += size
            pivots.extend(block[accepted].tolist())
    return rows[np.sort(np.asarray(pivots, dtype=np.intp))]


CENTRE_SELECTORS: dict[str, Callable] = {
    "uniform": uniform_centres,
    "kmeans++": kmeans_plusplus_centres,
    "kmeans": kmeans_centres,
    "rpcholesky": rpcholesky_centres,
}


def choose_centres(
    hashes, weights, rows_at, n_centres, gamma, method, rng, max_rows=None
):
    """Choose the centres from the weights of the distinct rows and a row fetcher.

    The one place that decides which centres a fit takes, in memory or over
    chunks: with at most ``n_centres`` distinct rows all of them; for
    ``"uniform"`` the rows at :func:`uniform_indices` (only those are fetched);
    for the adaptive selectors, which read every row, the selector on all
    distinct rows -- or, when there are more than ``max_rows`` (a chunked fit
    that cannot gather them all), on an unweighted uniform sample of
    ``max_rows`` of them that keeps their weights.

    Parameters
    ----------
    hashes : ndarray of shape (n_distinct,) and dtype ``HASH_DTYPE``
        The distinct rows' hashes, sorted (the canonical order).
    weights : ndarray of shape (n_distinct,)
        Total weights of the distinct rows, in canonical (hash) order.
    rows_at : callable
        ``rows_at(indices)`` returns the distinct rows at sorted ``indices``.
    n_centres, gamma, method, rng
        As in :func:`select_centres`.
    max_rows : int, default=None
        Most rows the adaptive selectors may read; None means no limit.

    Returns
    -------
    centres : ndarray of shape (n_chosen, n_features)
    sampled : bool
        Whether the adaptive selector saw a sample only (``max_rows`` reached),
        so that the centres differ from an unlimited choice's.
    """
    try:
        selector = CENTRE_SELECTORS[method]
    except KeyError:
        raise ValueError(
            f"centres must be one of {sorted(CENTRE_SELECTORS)}, got {method!r}."
        ) from None
    n_distinct = weights.shape[0]
    if n_distinct <= n_centres:
        return rows_at(np.arange(n_distinct)), False
    if selector is uniform_centres:
        indices = uniform_indices(weights, n_centres, rng, hashes["order"])
        return rows_at(indices), False
    keys = hashes["order"]  # the selectors that draw by key reuse them
    if max_rows is None or n_distinct <= max_rows:
        rows = rows_at(np.arange(n_distinct))
        return selector(rows, weights, n_centres, gamma, rng, keys=keys), False
    pool = uniform_indices(
        np.ones(n_distinct), max(max_rows, n_centres + 1), rng, hashes["order"]
    )
    centres = selector(
        rows_at(pool), weights[pool], n_centres, gamma, rng, keys=keys[pool]
    )
    return centres, True


def select_centres(
    X, sample_weight, n_centres, gamma, method, rng, hashes=None, distinct=None
):
    """Choose at most ``n_centres`` Nyström centres among the rows of ``X``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Dense training data.
    sample_weight : ndarray of shape (n_samples,)
        Non-negative weights with a positive sum.
    n_centres : int
        Requested number of centres.
    gamma : float
        Kernel coefficient (used by ``"rpcholesky"``).
    method : {"uniform", "kmeans++", "kmeans", "rpcholesky"}
        Selector, see :data:`CENTRE_SELECTORS`.
    rng : numpy.random.RandomState
        Source of randomness.
    hashes : ndarray of shape (n_samples,), default=None
        The rows' hashes (:func:`~sklmargin.features._row_keys.row_hashes`),
        when computed already (on a device, before its rows' host copy).
    distinct : tuple, default=None
        What :func:`~sklmargin.features._row_keys.distinct_row_hashes` gives
        for these rows and weights, when computed already (a fit that draws
        twice from the same rows: ``gamma="median"``'s sample and the
        centres); ``hashes`` is then not read.

    Returns
    -------
    centres : ndarray of shape (n_chosen, n_features)
        In the dtype of ``X``; all distinct positive-weight rows when there are at
        most ``n_centres`` of them.
    """
    if distinct is None:
        distinct = distinct_row_hashes(X, sample_weight, hashes)
    hashes, weights, index = distinct
    centres, _ = choose_centres(
        hashes, weights, lambda chosen: X[index[chosen]], n_centres, gamma, method, rng
    )
    return centres
