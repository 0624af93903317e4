"""Validation of sample and class weights, in one place for every entry point.

The estimators, :func:`~sklmargin.margin_softmax_loss` and the feature maps all
normalise their objective (or statistic) by the sum of the weights, so a weight
vector must be finite, non-negative and have a positive sum; otherwise a NaN or
a silent chance-level model follows. Class weights are multiplied into the
sample weights and checked by the same rule.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

from .array_api import NUMPY


def accepted_rows(xp):
    """``validate_data``'s dtype (and sparse) options for rows of ``xp``."""
    if xp is NUMPY:
        return {"accept_sparse": "csr", "dtype": [np.float64, np.float32]}
    return {"dtype": [xp.float64, xp.float32]}


def check_two_classes(classes, who="This classifier"):
    """Raise a ValueError naming the class when the labels hold fewer than two.

    Parameters
    ----------
    classes : ndarray
        The sorted distinct labels.
    who : str, default="This classifier"
        The subject of the message.
    """
    if len(classes) < 2:
        raise ValueError(
            f"{who} needs samples of at least 2 classes in the data, but the "
            f"data contains only one class: {classes[0]!r}."
        )


def encode_labels(y, who="This classifier"):
    """``(classes, y_encoded)`` of host labels, refused unless classification.

    ``who`` is the subject of the fewer-than-two-classes message.
    """
    check_classification_targets(y)
    classes, y_encoded = np.unique(y, return_inverse=True)
    check_two_classes(classes, who)
    return classes, y_encoded


def check_weights(sample_weight, n_samples, *, name="sample_weight"):
    """Return ``sample_weight`` as a validated float64 vector.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,), scalar or None
        None means unit weights; a scalar is broadcast.
    n_samples : int
    name : str, default="sample_weight"
        Used in error messages.

    Returns
    -------
    ndarray of shape (n_samples,)

    Raises
    ------
    ValueError
        If the shape is wrong, an entry is NaN, infinite or negative, or all
        weights are zero.
    """
    if sample_weight is None:
        return np.ones(n_samples)
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(n_samples, sample_weight, dtype=np.float64)
    try:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric; got {sample_weight!r}.") from exc
    if sample_weight.ndim != 1:
        raise ValueError(
            f"{name} must be 1D array or scalar; got shape {sample_weight.shape}."
        )
    if sample_weight.shape != (n_samples,):
        raise ValueError(
            f"{name}.shape == {sample_weight.shape}, expected ({n_samples},)!"
        )
    _check_weight_values(sample_weight, name)
    return sample_weight


def _check_weight_values(weights, name, total=True):
    """Refuse weights that are not finite, negative, of zero or infinite total.

    ``total=False`` (the Dask fit's check of the chunks' extremes, which are
    not the weights) leaves the total to :func:`check_weight_total`.
    """
    if not np.all(np.isfinite(weights)):
        raise ValueError(f"{name} must be finite; it contains NaN or infinity.")
    if np.any(weights < 0):
        raise ValueError(f"Negative values in data passed to {name}.")
    with np.errstate(over="ignore"):  # an infinite total is refused below
        total_float = weights.sum()
    if weights.size and not total_float > 0:
        raise ValueError(
            f"{name} sums to zero: at least one sample must have a positive weight."
        )
    if total and not total_float < np.finfo(np.float64).max / 2:
        # Near overflow the rounded float sum depends on its order: decide on
        # the exact total, rounded once, as the Dask fit does.
        from ..features._gamma import exact_sum

        check_weight_total(rounded_totals([exact_sum(weights)])[0], name)


def check_weight_total(total, name):
    """Refuse weights whose total overflows float64 (each weight finite).

    ``total`` is the exact total rounded once (:func:`rounded_totals`), in
    memory and in the Dask fit alike. The objective divides by it: an
    infinite one leaves a zero loss and NaN steps.
    """
    if not np.isfinite(total):
        raise ValueError(
            f"{name} sums to infinity in float64: rescale the weights (each is "
            "finite, their total is not)."
        )


def exact_class_totals(y_encoded, weights, n_classes):
    """Return the per-class sums of ``weights``, exactly, as Python integers.

    Each is :func:`~sklmargin.features._gamma.exact_sum` of the class's
    weights (the sum times ``2 ** 1127``): integers add exactly, so the totals
    of row chunks (a Dask fit's) add up to the in-memory ones whatever the
    chunking or the row order, and :func:`rounded_totals` rounds each once.

    Parameters
    ----------
    y_encoded : ndarray of shape (n_samples,)
        Labels as indices into the classes.
    weights : ndarray of shape (n_samples,)
        Finite float64 weights.
    n_classes : int

    Returns
    -------
    list of int
    """
    from ..features._gamma import exact_integers, exact_sum

    with np.errstate(over="ignore"):  # (a large total takes the exact path)
        small = np.sum(np.abs(weights)) < 2.0**53
    if small and np.all(weights == np.rint(weights)):
        # Integer weights (unit weights too) whose partial sums stay below
        # 2**53: the float64 sums are exact already, at bincount's speed.
        return exact_integers(np.bincount(y_encoded, weights, minlength=n_classes))
    return [exact_sum(weights[y_encoded == j]) for j in range(n_classes)]


def rounded_totals(totals):
    """Return the floats nearest exact totals (:func:`exact_class_totals`).

    One rounding each; a total beyond float64 is ``inf``, as a float sum's.
    """
    from ..features._gamma import float_of_exact

    def rounded(total):
        try:
            return float_of_exact(total)
        except ValueError:  # (the exact total overflows float64)
            return np.inf

    return np.array([rounded(total) for total in totals], dtype=np.float64)


def class_weight_factors(class_weight, classes, totals):
    """Per-class factors of ``class_weight`` ("balanced" uses weighted totals).

    "balanced" gives class ``j`` the factor ``S / (n_present T_j)``, with
    ``T_j`` its weight total, ``S`` the sum of all weights and ``n_present``
    the classes of positive total: computed from the exact totals and rounded
    once, so that it does not depend on the rows' order, nor, in a Dask fit,
    on their chunking (the chunks' exact totals add up to the in-memory ones).

    Parameters
    ----------
    class_weight : dict, "balanced" or None
    classes : ndarray of shape (n_classes,)
    totals : list of int or None
        The classes' exact weight totals (:func:`exact_class_totals`); read
        only for "balanced" (None otherwise).

    Returns
    -------
    ndarray of shape (n_classes,) or None
        None when ``class_weight`` is None.

    Raises
    ------
    ValueError
        If a dict names an unknown class or holds a non-numeric, NaN, infinite
        or negative weight.
    """
    n_classes = len(classes)
    if class_weight is None:
        return None
    factors = np.ones(n_classes)
    if isinstance(class_weight, str):  # "balanced", on weighted class totals
        n_present, total = sum(t > 0 for t in totals), sum(totals)
        for j, class_total in enumerate(totals):
            if class_total > 0:
                try:  # (the integers' quotient, rounded once)
                    factors[j] = total / (n_present * class_total)
                except OverflowError:  # refused with the product's message
                    factors[j] = np.inf
        return factors
    for label, weight in class_weight.items():
        index = np.flatnonzero(classes == label)
        if index.size == 0:
            raise ValueError(
                f"class_weight names class {label!r}, which is not in the "
                f"training labels {classes.tolist()}."
            )
        if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
            raise ValueError(
                f"class_weight[{label!r}] must be a real number; got {weight!r}."
            )
        if not (np.isfinite(weight) and weight >= 0):
            raise ValueError(
                f"class_weight[{label!r}] must be finite and >= 0; got {weight!r}."
            )
        factors[index] = weight
    return factors


def check_sample_and_class_weight(
    sample_weight, class_weight, classes, y_encoded, n_samples
):
    """Return the validated ``sample_weight`` times the ``class_weight`` factors.

    The product is checked again: class weights that zero out every sample
    leave nothing to fit and raise instead of producing a NaN model.

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    sample_weight = check_weights(sample_weight, n_samples)
    totals = None
    if isinstance(class_weight, str):
        totals = exact_class_totals(y_encoded, sample_weight, len(classes))
    factors = class_weight_factors(class_weight, classes, totals)
    if factors is None:
        return sample_weight
    weights = sample_weight * factors[y_encoded]
    _check_weight_values(weights, "sample_weight * class_weight")
    return weights


def check_logit_range(largest, dtype, remedy):
    """Refuse logits (or a logit scale) of magnitude ``largest`` in ``dtype``.

    The limit is ``finfo(dtype).max / 64``: cosines and margin targets are
    bounded (``|h| <= 2 m + 1``), so logits below it stay finite, and so do
    their softmax's sums.

    Raises
    ------
    ValueError
        Naming ``largest``, the dtype, the limit and ``remedy``.
    """
    limit = float(np.finfo(dtype).max) / 64.0
    if not largest < limit:
        raise ValueError(
            f"The logit scale reaches {largest:.3g}, beyond what {np.dtype(dtype)} "
            f"logits can hold (about {limit:.3g}): {remedy}."
        )


class FeatureScaleWarning(UserWarning):
    """The feature columns' scales differ so much that the fit ignores most of them.

    Raised by :meth:`MarginSoftmaxClassifier.fit` (and the kernel and CV
    estimators, which share its validation) on dense NumPy input when the
    largest column's root-mean-square is more than
    :data:`FEATURE_SCALE_RATIO` times the median of the other columns'. Put a
    :class:`~sklearn.preprocessing.StandardScaler` before the classifier; to
    silence it deliberately, ``warnings.filterwarnings("ignore",
    category=FeatureScaleWarning)``.
    """


#: Largest column root-mean-square over the median of the others' beyond which
#: :class:`FeatureScaleWarning` is raised: below it, one enlarged column costs
#: the default AM-Softmax under a point of training accuracy; above it the
#: loss grows quickly, while raw data that needs a scaler (incomes beside ages,
#: raw wine or breast_cancer) lies far beyond it and the standardised benchmark
#: sets well below (the benchmarks page, "Feature scales", has the numbers).
FEATURE_SCALE_RATIO = 20.0


def check_feature_scales(X, sample_weight, estimator=None):
    """Warn when one column's scale dwarfs the others' (dense NumPy ``X``).

    A cosine loss normalises each row, so a column a thousand times larger
    than the others fixes the direction of every row and the other columns
    barely move it: the model then sees one feature. The statistic is the
    largest (weighted) column root-mean-square, uncentred so that a large
    offset counts as well, over the median of the other non-zero columns'.
    Rows of one common length (unit-norm embeddings, within 1%) are left alone: their
    columns' scales are the embedding's own geometry, not units.

    One pass over ``X`` for the column statistics; the row norms only when
    the ratio is exceeded.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Validated training rows; sparse matrices are not checked.
    sample_weight : ndarray of shape (n_samples,)
        Validated weights.
    estimator : estimator instance, default=None
        The classifier being fitted: the message names its class, and the
        largest column by its ``feature_names_in_`` (a DataFrame's column
        names) where it has them. None: "This classifier", by index.

    Returns
    -------
    float or None
        The ratio, or None when it was not computed (sparse input, fewer than
        two non-zero columns).
    """
    if not isinstance(X, np.ndarray) or X.ndim != 2 or X.shape[1] < 2:
        return None
    weights = np.asarray(sample_weight, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        # float64 sums: float32 squares of large rows would overflow
        mean_square = np.einsum("i,ij,ij->j", weights, X, X, dtype=np.float64)
    if not np.all(np.isfinite(mean_square)):  # squares beyond float64: rescale
        X = X / np.max(np.abs(X))
        mean_square = np.einsum("i,ij,ij->j", weights, X, X)
    mean_square /= weights.sum()
    rms = np.sqrt(mean_square[mean_square > 0])
    if rms.size < 2:
        return None
    largest = int(np.argmax(rms))
    others = np.median(np.delete(rms, largest))
    ratio = float(rms[largest] / others)
    if not ratio > FEATURE_SCALE_RATIO:
        return ratio
    used = weights > 0
    norms = np.sqrt(np.einsum("ij,ij->i", X[used], X[used]))
    # Rows of one length within 1%: an embedding, not mixed units (embeddings
    # normalised and stored in float16 are off by up to 5e-4).
    if norms.size and norms.min() > 0 and norms.max() <= 1.01 * norms.min():
        return ratio
    column = int(np.flatnonzero(mean_square > 0)[largest])
    name = f"column {column}"
    feature_names = getattr(estimator, "feature_names_in_", None)
    if feature_names is not None:
        name += f" ({str(feature_names[column])!r})"
    # A round bound, not the ratio itself: the same text in every fold of a
    # CV fit, so that Python's default filter shows it once, not once a fold.
    bound = max(FEATURE_SCALE_RATIO, 10.0 ** np.floor(np.log10(ratio)))
    who = "This classifier" if estimator is None else type(estimator).__name__
    warnings.warn(
        f"{who}: the feature scales differ by a factor of more than {bound:,.0f} "
        f"(root-mean-square of {name} over the median of the other columns'; "
        f"more than {FEATURE_SCALE_RATIO:g} costs accuracy): the fit is "
        "dominated by the largest columns and will ignore the others. Put a "
        "StandardScaler before the classifier, e.g. make_pipeline("
        "StandardScaler(), clf).",
        FeatureScaleWarning,
        stacklevel=3,
    )
    return ratio
