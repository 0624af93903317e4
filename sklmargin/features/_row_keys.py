"""Row hashes: the identity and the canonical order of the distinct rows.

The Nyström centre selectors (:mod:`sklmargin.features._centres`) work on the
distinct rows of the training data, each with the total weight of its copies,
in the order of a hash of their content. The hash has a *stable* lane, a key
that float32 round-off of a row rarely changes (:func:`stable_row_keys`), which
orders the rows and seeds each row's random draw, and two exact lanes that
identify the row. Everything is computed row by row in a fixed order, by
elementwise steps that every IEEE device rounds alike (:func:`_lanes`), so
equal rows get equal hashes in memory, in every chunk of a Dask array and on a
device: torch and CuPy rows on an accelerator are hashed where they live, and
only the hashes come to the host.
"""

from __future__ import annotations

import numpy as np

from .._utils.array_api import float64_supported, get_namespace, has_bit_views, to_numpy

#: A row's hash: a *stable* lane (:func:`stable_row_keys`: the row's direction
#: and length on a coarse grid, so that round-off of the row rarely changes it),
#: then two lanes hashing its exact float64 value (the identity);
#: :func:`unique_hashes` and np.searchsorted order them lane by lane, so the
#: canonical order of the distinct rows follows the stable lane.
HASH_DTYPE = np.dtype([("order", np.uint64), ("high", np.uint64), ("low", np.uint64)])
# Lane seeds (hex digits of pi) and splitmix64's constants (Steele, Lea & Flood,
# "Fast splittable pseudorandom number generators", OOPSLA 2014).
_HASH_SEEDS = tuple(
    np.uint64(seed)
    for seed in (0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0)
)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def _signed(value):
    """Return the int64 with the same bits as the uint64 constant ``value``."""
    value = int(value)
    return value - (1 << 64) if value >= 1 << 63 else value


# The same constants as int64 with the same bits: the hash runs in int64 in
# every namespace (:func:`_mix64_int`, :func:`_lanes`).
_SEEDS_INT = tuple(_signed(seed) for seed in _HASH_SEEDS)
_GOLDEN_INT = _signed(_GOLDEN)
_MIX_INT = tuple(_signed(factor) for factor in _MIX)

# The stable lane: the unit row's coordinates along _N_DIRECTIONS fixed random
# directions and log2 of the row's norm, each on a grid of 2**-_GRID_BITS.
# A perturbation of relative size delta moves a coordinate across a grid line
# with probability about delta * 2**_GRID_BITS * |coordinate| (coordinates are
# ~N(0, 1)): for a 2-ulp float32 change (delta = 2.4e-7) about 1e-5 per
# coordinate, 4e-5 per row; two distinct rows share the lane only if they
# agree to 1/32 in all four numbers. A finer grid trades stability for fewer
# shared keys (the benchmarks page, "Label stability", measures both rates for
# grids of 1/32 and 1/256).
_N_DIRECTIONS = 3
_GRID_BITS = 5
_DIRECTION_SEED = 0x5EED_C0DE


def mix64(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection of uint64 in which every bit avalanches."""
    return _mix64_int(np.asarray(h, dtype=np.uint64).view(np.int64)).view(np.uint64)


def draw_salt(rng):
    """Return a uint64 salt for :func:`keyed_priority`: one int64 draw of ``rng``."""
    return np.uint64(rng.randint(0, np.iinfo(np.int64).max, dtype=np.int64))


def keyed_priority(keys, salt):
    """Return ``mix64(key ^ salt)`` of each uint64 key: rows drawn by their keys.

    Sorting rows by it orders them at random (a new salt, a new order) but
    by their keys alone: a row's place does not depend on its position.
    """
    return mix64(np.asarray(keys, dtype=np.uint64) ^ salt)


def _directions(n_features):
    """Return the fixed random directions of the stable lane (seeded by ``d``)."""
    rng = np.random.default_rng([_DIRECTION_SEED, n_features])
    return rng.standard_normal((n_features, _N_DIRECTIONS))


def stable_row_keys(X: np.ndarray) -> np.ndarray:
    r"""Return a hash of every row that float32 round-off of the row rarely changes.

    The row ``x``, rounded to float32, is reduced to the coordinates
    :math:`u_k = \langle x, r_k \rangle / \lVert x \rVert` of its direction along
    three fixed Gaussian directions :math:`r_k` (seeded by ``d`` only) and to
    :math:`\log_2 \lVert x \rVert`; each is put on a grid of step
    :math:`2^{-5}` and the four cells are hashed. A perturbation of relative size
    :math:`\delta` changes the key only when it moves one of the four across a
    grid line, with probability about :math:`\delta\, 2^{5}` times the
    coordinate's size: about :math:`4 \cdot 10^{-5}` per row for a 2-ulp
    float32 change.
    Hashing the row's bytes instead changes every key under any perturbation.

    The key depends on the row alone and is computed one column at a time in a
    fixed order (no BLAS): equal rows get equal keys in memory, in every chunk
    of a Dask array and on a host copy of device data; a float64 row and its
    float32 rounding get the same key. Distinct rows may share a key (they then
    agree to :math:`2^{-5}` in the four numbers); the exact lanes of
    :func:`row_hashes` tell them apart. Rows beyond float32's range hash their
    exact float64 value instead.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        float32 or float64.

    Returns
    -------
    keys : ndarray of shape (n_samples,) and dtype uint64
        On the host, whatever ``X``'s namespace.
    """
    return _lanes(X, exact=False)["order"]


def row_hashes(X: np.ndarray) -> np.ndarray:
    """Return a hash of the content of every row of ``X``.

    Three 64-bit lanes: the stable key of :func:`stable_row_keys` (the sort key:
    the canonical order of the distinct rows follows it, so that round-off of
    the rows hardly moves them) and two chains of splitmix64 finalisers over
    the row's exact float64 words (the identity). Rows equal as numbers
    (``-0.0`` and ``0.0`` included, float32 or float64) have equal hashes; two
    distinct rows collide with probability about :math:`2^{-128}` per pair, so
    the hash serves as the row's identity, also across the chunks of a Dask
    array.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        float32 or float64.

    Returns
    -------
    hashes : ndarray of shape (n_samples,) and dtype :data:`HASH_DTYPE`
        On the host, whatever ``X``'s namespace.
    """
    hashes = np.empty(X.shape[0], dtype=HASH_DTYPE)
    for lane, values in _lanes(X, exact=True).items():
        hashes[lane] = values
    return hashes


def unique_hashes(hashes):
    """``np.unique(hashes, return_index=True, return_inverse=True)``, faster.

    The same three arrays (the sorted distinct hashes, the first row of each,
    every row's place among them), from one lexicographic sort of the three
    uint64 lanes: a structured dtype's sort compares records field by field
    through a generic routine, about three times slower (0.71 s against
    0.25 s for 400,000 rows). The sort is stable, so the first row of each
    distinct hash is its smallest index, as ``np.unique`` reports.
    """
    order = np.lexsort(tuple(hashes[lane] for lane in reversed(HASH_DTYPE.names)))
    ranked = hashes[order]
    new = np.ones(ranked.shape[0], dtype=bool)  # where a distinct hash starts
    new[1:] = np.any(
        [ranked[lane][1:] != ranked[lane][:-1] for lane in HASH_DTYPE.names], axis=0
    )
    inverse = np.empty(ranked.shape[0], dtype=np.intp)
    inverse[order] = np.cumsum(new) - 1
    return ranked[new], order[new], inverse


def distinct_row_hashes(X: np.ndarray, sample_weight: np.ndarray, hashes=None):
    """Hashes, total weights and a first index of the distinct positive-weight rows.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Dense data.
    sample_weight : ndarray of shape (n_samples,)
        Non-negative weights.
    hashes : ndarray of shape (n_samples,) and dtype :data:`HASH_DTYPE`, \
default=None
        :func:`row_hashes` of ``X``, when already computed (where the rows
        live, before a host copy of a device array); None computes them.

    Returns
    -------
    hashes : ndarray of shape (n_distinct,) and dtype :data:`HASH_DTYPE`
        Sorted: the canonical order of the distinct rows.
    weights : ndarray of shape (n_distinct,)
        float64 sum of the sample weights of each distinct row's copies.
    index : ndarray of shape (n_distinct,)
        The row of ``X`` holding the first copy of each.
    """
    positive = np.flatnonzero(sample_weight > 0)
    if hashes is None:
        hashes = row_hashes(X)
    hashes, first, inverse = unique_hashes(hashes[positive])
    weights = np.bincount(
        inverse.ravel(), weights=sample_weight[positive], minlength=hashes.shape[0]
    )
    return hashes, weights, positive[first]


#: Devices whose rows are hashed by the NumPy code: a torch CPU tensor is a
#: free NumPy view, and NumPy's loops are faster there than torch's (400,000
#: x 50 rows: 1.2 s against 1.8 s, one thread). Tests empty it to run the
#: device code on torch cpu.
HOST_DEVICES = ("cpu",)


def _hashes_on_device(X):
    """Whether ``X`` is a torch or CuPy array to hash where it lives.

    Those libraries reinterpret float64 bits as int64 (``view``) and compute
    in float64 on every accelerator that supports it; other array API arrays,
    host tensors (:data:`HOST_DEVICES`) and MPS (no float64) are hashed from a
    host copy.
    """
    if not has_bit_views(X):
        return False
    xp, device = get_namespace(X)
    on_host = str(device).split(":")[0] in HOST_DEVICES
    return not on_host and float64_supported(xp, device)


def _shift_right(h, bits):
    """Logical right shift of int64 ``h`` holding uint64 bits."""
    return (h >> bits) & ((1 << (64 - bits)) - 1)


def _mix64_int(h):
    """:func:`mix64` on int64 arrays (same bits): products wrap modulo 2**64."""
    h = h ^ _shift_right(h, 30)
    h = h * _MIX_INT[0]
    h = h ^ _shift_right(h, 27)
    h = h * _MIX_INT[1]
    return h ^ _shift_right(h, 31)


def _lanes(X, exact):
    """Compute the lanes of :func:`row_hashes` (``exact``), or the stable one alone.

    One implementation for every namespace: column by column in a fixed order,
    float64 products and sums (correctly rounded elementwise operations on
    every IEEE device), the uint64 arithmetic of the hash in int64 (the same
    bits: shifts masked to be logical, products wrapping modulo 2**64). torch
    and CuPy rows on an accelerator (:func:`_hashes_on_device`) are hashed
    there, others from a host copy. The logarithm of the norm could differ in
    its last bit between math libraries, which moves a key only for a norm
    within that bit of a grid line. Returns host uint64 arrays: ``"order"``,
    and ``"high"``, ``"low"`` with ``exact``.
    """
    if not _hashes_on_device(X):
        X = to_numpy(X)  # (a Dask array under array API dispatch: its values)
    xp, device = get_namespace(X)
    n_rows, n_features = X.shape
    f64, i64 = xp.float64, xp.int64
    directions = xp.asarray(_directions(n_features), dtype=f64, device=device)
    along = xp.zeros((n_rows, _N_DIRECTIONS), dtype=f64, device=device)
    squares = xp.zeros(n_rows, dtype=f64, device=device)
    high = xp.full(n_rows, _SEEDS_INT[1], dtype=i64, device=device)
    low = xp.full(n_rows, _SEEDS_INT[2], dtype=i64, device=device)
    # Rows beyond float32's range overflow to inf in its cast: handled below.
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(n_features):
            column = xp.astype(xp.astype(X[:, j], xp.float32), f64)
            along += column[:, None] * directions[j]
            squares += column * column
            if exact:
                # + 0.0 turns -0.0 into 0.0: one row, one hash.
                bits = (xp.astype(X[:, j], f64) + 0.0).view(i64)
                high = _mix64_int(high ^ bits)
                low = _mix64_int(low + bits * _GOLDEN_INT)
        norms = xp.sqrt(squares)
        finite = xp.isfinite(norms)
        positive = finite & (norms > 0)
        safe = xp.where(positive, norms, xp.ones_like(norms))
        unit = xp.where(positive[:, None], along / safe[:, None], xp.zeros_like(along))
        # The zero row's own cell for log2 of the norm.
        log_norm = xp.where(positive, xp.log2(safe), xp.full_like(norms, -(2.0**20)))
    key = xp.full(n_rows, _SEEDS_INT[0], dtype=i64, device=device)
    for values in [unit[:, k] for k in range(_N_DIRECTIONS)] + [log_norm]:
        key = _mix64_int(key ^ xp.astype(xp.floor(values * 2.0**_GRID_BITS), i64))
    lanes = {"order": key, "high": high, "low": low} if exact else {"order": key}
    host = {name: to_numpy(lane).view(np.uint64) for name, lane in lanes.items()}
    unbounded = np.flatnonzero(~to_numpy(finite))
    if unbounded.size:  # beyond float32: the exact value decides the key
        if exact:
            exact_high = host["high"][unbounded]
        else:  # the exact lanes of those rows alone (their order lane unused)
            rows = to_numpy(X[xp.asarray(unbounded, device=device), ...])
            exact_high = _lanes(rows, exact=True)["high"]
        host["order"][unbounded] = exact_high  # (a fresh host array)
    return host
