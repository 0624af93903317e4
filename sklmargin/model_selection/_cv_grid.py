"""The values of the search's grid axes: default paths and margins, checks.

The default ``s`` (or ``C``) path and margins of a loss, the validation of a
user's grid (values outside a loss's domain are skipped with a warning), and
the kernel search's widths written as multiples of ``gamma="scale"``
(``"2*scale"``), resolved on each fold's rows.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from ..features._kernel_features import gamma_factor

#: Length of the default path over ``s`` (or ``C``): as many points as
#: LogisticRegressionCV's default ``Cs=10``. Warm starts make each point cheap.
_PATH_LENGTH = 10
#: The default s path spans the registry's s grid widened by these factors:
#: searches over the registry's grid chose its upper edge, and CV accuracy
#: still rose beyond it on some sets.
_S_PATH_WIDEN = (2.0 / 3.0, 8.0 / 3.0)


def default_path(margin):
    """Default ``(name, values)`` of the regularisation path of a loss.

    Losses with an L2 penalty (softmax, L-Softmax) follow ``C`` over the
    registry's range; the others follow ``s`` over the registry's range widened
    by ``_S_PATH_WIDEN``, in ``_PATH_LENGTH`` geometric steps.

    Examples
    --------
    >>> from sklmargin.losses import get_margin
    >>> name, values = default_path(get_margin("am-softmax"))
    >>> name, round(values[0], 6), round(values[-1], 6), len(values)
    ('s', 10.0, 160.0, 10)
    """
    if margin.penalized:
        grid = margin.search_grid["C"]
        return "C", tuple(
            float(v) for v in np.geomspace(min(grid), max(grid), _PATH_LENGTH)
        )
    grid = margin.search_grid.get("s", (margin.default_s,))
    lo, hi = min(grid) * _S_PATH_WIDEN[0], max(grid) * _S_PATH_WIDEN[1]
    return "s", tuple(float(v) for v in np.geomspace(lo, hi, _PATH_LENGTH))


def default_margins(margin):
    """Default ``ms``: the loss's own default margin only.

    The scale decides accuracy most; crossing the registry's three margins
    (0, 0.05, 0.1) with the s path triples the cost for little CV accuracy on
    most data sets (the model-selection page). Pass
    ``ms=margin.search_grid["m"]`` for the crossed grid.

    Examples
    --------
    >>> from sklmargin.losses import get_margin
    >>> default_margins(get_margin("arcface"))
    (0.05,)
    """
    return (float(margin.default_m),)


def _valid_values(values, check, name, loss, sort=True, domain=None):
    """Keep the grid values that ``check`` accepts; warn about the others.

    Numeric grids come back sorted and without duplicates (paths must ascend);
    ``sort=False`` keeps the given order (a gamma grid may mix "scale" and
    numbers). ``domain`` says what the values must be when it is not the
    loss's domain (the warning names it).
    """
    kept, skipped = [], []
    for value in values:
        try:
            kept.append(check(value))
        except (TypeError, ValueError):
            skipped.append(value)
    if not kept:
        # Nothing to fit: let the loss explain its domain on the first value.
        if len(values):
            check(values[0])
        raise ValueError(f"The {name} grid of loss={loss!r} is empty.")
    if skipped:
        where = domain or f"the domain of loss={loss!r}"
        warnings.warn(
            f"Skipping {name}={skipped} outside {where}; searching {name}={kept}.",
            UserWarning,
            stacklevel=3,
        )
    if sort:
        return tuple(sorted(set(kept)))
    return tuple(dict.fromkeys(kept))


def _accepts(check):
    """``valid(value)``: whether ``check`` (a ``check_m``, ``check_s``) accepts it."""

    def valid(value):
        try:
            check(value)
        except (TypeError, ValueError):
            return False
        return True

    return valid


def _check_positive(value, name="C"):
    """Return ``value`` as a float if it is finite and positive (a C or gamma)."""
    number = float(value)
    if not (np.isfinite(number) and number > 0):
        raise ValueError(
            f"{name} must be a finite positive number; got {name}={value!r}."
        )
    return number


#: Default kernel width grid, multiples of gamma="scale" (see ``gammas``).
_GAMMA_FACTORS = (0.5, 1.0, 2.0)
#: Default s path of the kernel search, multiples of the loss's kernel default s.
_S_FACTORS = (0.5, 1.0, 2.0, 4.0)
#: Default C path of the kernel search's penalised losses (plain softmax).
_KERNEL_CS = (1.0, 10.0, 100.0)


def _write_factor(factor):
    """Write a multiple of "scale" as ``gammas`` takes it: "scale", "2*scale"."""
    return "scale" if factor == 1.0 else f"{float(factor):g}*scale"


_DEFAULT_GAMMAS = tuple(_write_factor(f) for f in _GAMMA_FACTORS)


def _check_gamma(gamma):
    """Return a valid ``gammas`` entry: "scale", "<factor>*scale" or a float."""
    try:
        if gamma == "auto":  # the estimator's word: its grid writes multiples
            raise ValueError(gamma)
        if isinstance(gamma, str):
            return _write_factor(gamma_factor(gamma))
        return _check_positive(gamma, "gamma")
    except (TypeError, ValueError):
        raise ValueError(
            'gammas must hold "scale", "<factor>*scale" (e.g. "2*scale") or '
            f"finite positive floats (RBF widths); got gamma={gamma!r}."
        ) from None


def store_params(estimator, params):
    """Store an ``__init__``'s arguments, ``locals()``, verbatim as attributes.

    Called first in ``__init__``, so ``params`` holds exactly the signature's
    parameters (and ``self``): scikit-learn's ``get_params`` reads them back
    by the signature's names.
    """
    for name, value in params.items():
        if name != "self":
            setattr(estimator, name, value)


def _grid_points(axes, names):
    """Return the grid over ``names`` as dicts, in lexicographic order."""
    grids = [axes[name] for name in names]
    return [dict(zip(names, point, strict=True)) for point in itertools.product(*grids)]


def search_points(job_points, map_points, heads):
    """Every grid point of a search, in the order of ``cv_results_["params"]``.

    The job axes (the kernel's metric) lead, then the map's (gamma), then each
    head's (loss) inner points (m) and path values: the order in which the
    jobs fit them. With several losses each point masks the other heads'
    path (``s`` or ``C`` None).
    """
    other = {h.path_name: None for h in heads} if len(heads) > 1 else {}
    return [
        {**job_point, **map_point, **inner, **other, head.path_name: value}
        for job_point in job_points
        for map_point in map_points
        for head in heads
        for inner in head.inner_points
        for value in head.path_values
    ]
