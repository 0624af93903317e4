"""The margin-free logits of a fitted estimator as plain arrays (no ONNX needed).

:func:`_logit_description` is the one place that reads the estimators' fitted
attributes for export and for the learned metric's input gradients
(:mod:`sklmargin.estimators._metric`). It is prediction's formula
(:func:`~sklmargin.objective._linear.margin_free_logits`) in the folded form
a graph needs, not a copy of it: the scale is read off the margin's own
``logit_scale`` and folded, with ``1 / |w_j|``, into one matrix.
:func:`_logits_from_description` evaluates the description's arrays (never
the fitted attributes, or its test against ``decision_function`` would
compare prediction with itself) with the kernels prediction uses
(:func:`~sklmargin.objective._rows.lifted_cosines`, and the map's own
description's ``forward``): the NumPy reference of the graph, built in
:mod:`sklmargin.integrations.onnx._export`, whose module docstring gives the
formula. The learned metric reads the description during a NumPy fit, which
loads no integration: so it lives here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class _LogitDescription:
    """Margin-free logits of a fitted classifier, as plain arrays.

    ``normalise=False``: ``z = phi(x) @ matrix + bias``.
    ``normalise=True``:
    ``z = (phi(x) @ matrix + inner_bias) / max(sqrt(|phi(x)|^2 + lift^2), tiny)
    + bias``.
    """

    feature_map: object  # the map's describe(), or None
    matrix: np.ndarray  # (n_features_mapped, n_classes)
    bias: np.ndarray  # (n_classes,)
    normalise: bool
    inner_bias: np.ndarray  # (n_classes,), used when normalise
    lift: float  # c, used when normalise
    tiny: float  # floor of the row norm, used when normalise
    # The learned input metric, applied to x before phi: per-feature scales
    # (x * t) or a matrix acting on rows (x @ T); None without one.
    input_transform: np.ndarray | None = None


def _map_description(feature_map):
    """Read the fitted arrays of a feature map: its own ``describe()``."""
    describe = getattr(feature_map, "describe", None)
    if describe is None:
        raise NotImplementedError(
            "ONNX export supports the feature maps NystroemFeatures and "
            "RandomFourierFeatures; got "
            f"{type(feature_map).__module__}.{type(feature_map).__name__}."
        )
    return describe()


#: Row norms at which a margin's logit scale is checked before export: every
#: half decade over the range float64 rows can take without the scaled logits
#: overflowing, plus the norms of unit-scale data. The graph cannot call
#: Python, so a rule is exported only where it matched one of the two forms at
#: all of these.
_PROBE_NORMS = np.unique(
    np.concatenate([np.geomspace(1e-200, 1e200, 801), np.linspace(0.05, 20.0, 400)])
)


def _scale_factors(margin, s, w_norm):
    """Per-class factors of the margin's own ``logit_scale``, and its form.

    The scale rule is read off the one function training and prediction use
    (:meth:`Margin.logit_scale`), called as prediction calls it -- with the
    fitted prototype norms ``w_norm`` (None for margins without angles) --
    instead of being written again here. Returns ``(form, factors)``: form
    "constant" (``scale_ij = factors_j``) or "row" (``scale_ij = factors_j
    * |x_i|``; A-Softmax's ``s |x|`` and L-Softmax's ``|x| |w_j|``).

    The factors come from a one-row call at ``|x| = 1``; the form must then
    hold at every norm of ``_PROBE_NORMS`` in one batch (which also refuses a
    rule that depends on the other rows). A rule that matched a few norms only
    (``s * clip(|x|, 0.1, 1)`` at 1, 2.5 and 4) exported silently wrong
    logits; anything else now raises NotImplementedError.
    """
    name = type(margin.stateless()).__name__
    n_classes = 1 if w_norm is None else len(w_norm)

    def scale_at(norms):
        with np.errstate(all="ignore"):
            scale = np.asarray(margin.logit_scale(s, norms, w_norm), dtype=np.float64)
        rows = 1 if norms is None else len(norms)
        try:
            return np.broadcast_to(scale, (rows, n_classes))
        except ValueError as error:
            raise NotImplementedError(
                f"ONNX export: {name}.logit_scale returned shape {scale.shape}, "
                f"not broadcastable to (n_samples, n_classes) = ({rows}, "
                f"{n_classes})."
            ) from error

    if w_norm is None:  # raw inner products: prediction passes no norms
        factors = scale_at(None)[0]
        if not np.all(np.isfinite(factors)):
            raise NotImplementedError(
                f"ONNX export: {name}.logit_scale is not finite: {factors}."
            )
        return "constant", factors
    factors = scale_at(np.ones(1))[0]
    scale = scale_at(_PROBE_NORMS)
    candidates = {
        "constant": np.broadcast_to(factors, scale.shape),
        "row": _PROBE_NORMS[:, None] * factors,
    }
    # Per probe norm: does the form hold (to rounding) at every class?
    holds = {
        form: np.all(np.isclose(scale, expected, rtol=1e-12, atol=0.0), axis=1)
        for form, expected in candidates.items()
    }
    for form, at_every_norm in holds.items():
        if np.all(np.isfinite(factors)) and np.all(at_every_norm):
            return form, factors
    first_miss = {form: _PROBE_NORMS[np.argmin(at)] for form, at in holds.items()}
    raise NotImplementedError(
        "ONNX export supports logit scales that are, at the fitted prototypes, "
        "constant or proportional to the row norm |x| (s, s |x|, |x| |w_j|); "
        f"{name}.logit_scale is neither (from its value at |x| = 1 it departs "
        f"from a constant at |x| = {first_miss['constant']:.3g} and from "
        f"proportionality at |x| = {first_miss['row']:.3g}), so the graph "
        "cannot reproduce it. Predict in Python, or give the margin one of "
        "these rules."
    )


def _logit_description(estimator):
    """Describe the margin-free logits of a fitted estimator (plain arrays).

    The ONE place that reads the estimators' fitted attributes (``coef_``,
    ``constant_coef_``, ``constant_feature_``, ``intercept_``, ``s_``,
    ``margin_``, ``feature_map_``, ``input_transform_``). Prediction is
    ``z = logit_scale * cos([x, c], [w, w_c]) + b``
    (:func:`sklmargin.objective._linear.margin_free_logits`); with a scale that is
    constant this needs the row norm in the graph, with a scale proportional to
    ``|x|`` the norms cancel and the logits are linear in x. The per-class
    factors of the scale (and ``1 / |w_j|``) are folded into the matrix.
    """
    from sklearn.utils.validation import check_is_fitted

    from ._rows import TINY_NORM

    check_is_fitted(estimator)
    margin = estimator.margin_
    feature_map = getattr(estimator, "feature_map_", None)
    transform = getattr(estimator, "input_transform_", None)
    coef = np.asarray(estimator.coef_, dtype=np.float64)
    bias = np.asarray(estimator.intercept_, dtype=np.float64)
    inner_bias, lift = np.zeros(coef.shape[0]), 0.0
    if not margin.uses_angle:  # raw inner products times a constant scale
        form, per_class = "linear", _scale_factors(margin, estimator.s_, None)[1]
    else:
        lift = float(estimator.constant_feature_)
        constant_coef = np.asarray(estimator.constant_coef_, dtype=np.float64)
        w_norm = np.maximum(
            np.sqrt(np.sum(coef**2, axis=1) + constant_coef**2), float(TINY_NORM)
        )
        if lift > 0:
            inner_bias = lift * constant_coef
        form, factors = _scale_factors(margin, estimator.s_, w_norm)
        per_class = factors / w_norm
        inner_bias = inner_bias * per_class
    # "constant": s [x, c].[w, w_c] / (|[x, c]| |w|) + b; otherwise no row
    # norm (none, or |x| cancels against the cosine's): linear in x.
    normalise = form == "constant"
    return _LogitDescription(
        feature_map=None if feature_map is None else _map_description(feature_map),
        matrix=coef.T * per_class,
        bias=bias if normalise else bias + inner_bias,
        normalise=normalise,
        inner_bias=inner_bias if normalise else np.zeros_like(inner_bias),
        lift=lift if normalise else 0.0,
        tiny=float(TINY_NORM) if normalise else 0.0,
        input_transform=None if transform is None else np.asarray(transform, float),
    )


def _logits_from_description(description, X):
    """NumPy evaluation of a description, in float64 (the reference of tests).

    Its arrays go through the functions prediction uses: the map's
    description's ``forward`` (the maps' kernel block) and, for the
    normalised form,
    :func:`~sklmargin.objective._rows.lifted_cosines`.
    """
    from ._rows import lifted_cosines

    features = np.asarray(X, dtype=np.float64)
    transform = description.input_transform
    if transform is not None:  # the learned metric: x * t or x @ T
        features = features * transform if transform.ndim == 1 else features @ transform
    if description.feature_map is not None:
        features = description.feature_map.forward(features)
    if not description.normalise:
        return features @ description.matrix + description.bias
    # The matrix holds the prototypes with 1/|w| and the scale folded in, the
    # inner bias their lift coordinate times c: the cosine of the lifted rows
    # against those columns, unnormalised (the graph divides each row by its
    # peak first; the cosine is the same).
    lift = description.lift
    cos, _, _ = lifted_cosines(
        features,
        description.matrix.T,
        constant=lift,
        constant_coef=description.inner_bias / lift if lift else None,
        normalize_coef=False,
    )
    return cos + description.bias
