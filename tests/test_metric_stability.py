"""The kernel fit's intermediate state decided by the data, not by row order.

The learned metric's pilot takes its rows in an order the rows' content
decides (rows sharing a stable key included), ``gamma="scale"`` is an exactly
rounded sum, and the final solve keeps 50 curvature pairs (the pilot
scipy's 10): the benchmarks page, "Label stability", has the measurements.
"""

import warnings

import numpy as np
from numpy.testing import assert_array_equal

import sklmargin.solver._lbfgs as lbfgs_module
from sklmargin import KernelMarginSoftmaxClassifier
from sklmargin.features._gamma import scale_gamma
from sklmargin.features._row_keys import stable_row_keys


def test_scale_gamma_does_not_depend_on_the_order_of_the_rows():
    rng = np.random.default_rng(0)
    X = (rng.standard_normal((3000, 7)) * rng.uniform(0.1, 10.0, 7)).astype(np.float32)
    weights = rng.uniform(0.2, 3.0, X.shape[0])
    gamma = scale_gamma(X, weights)
    # (A dot product of the per-row sums differed in the last bit for about
    # half of the permutations.)
    for seed in range(10):
        order = np.random.default_rng(seed).permutation(X.shape[0])
        assert scale_gamma(X[order], weights[order]) == gamma  # to the last bit


def _rows_sharing_keys():
    """Rows of which a fifth repeat others, jittered below the key's grid
    (and some exactly), under other labels: rows that share a stable key."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    source = rng.choice(300, 60, replace=False)
    copies = X[source] * (1 + 1e-9 * rng.standard_normal((60, 5)))
    copies[::3] = X[source[::3]]  # exact copies
    X = np.vstack([X, copies])
    y = np.concatenate([y, 1 - y[source]])
    return X, y


def test_the_learned_metric_and_gamma_do_not_depend_on_the_order_of_the_rows():
    X, y = _rows_sharing_keys()
    keys = stable_row_keys(X)
    assert len(np.unique(keys)) < len(keys) - 50  # the rows do share keys
    fits = []
    for seed in (None, 1, 2):
        order = (
            np.arange(len(y))
            if seed is None
            else np.random.default_rng(seed).permutation(len(y))
        )
        model = KernelMarginSoftmaxClassifier(n_components=40, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (convergence is not the point)
            fits.append(model.fit(X[order], y[order]))
    for other in fits[1:]:
        # Identical to the last bit: the same pilot rows in the same order.
        assert_array_equal(other.input_transform_, fits[0].input_transform_)
        assert other.feature_map_.gamma_ == fits[0].feature_map_.gamma_
        assert_array_equal(
            other.feature_map_.components_, fits[0].feature_map_.components_
        )


def test_the_final_kernel_solve_keeps_50_curvature_pairs_and_the_pilot_10(
    monkeypatch,
):
    memories = []
    minimize = lbfgs_module.minimize

    def recording(*args, **kwargs):
        memories.append(kwargs["options"].get("maxcor", 10))
        return minimize(*args, **kwargs)

    monkeypatch.setattr(lbfgs_module, "minimize", recording)
    X, y = _rows_sharing_keys()
    model = KernelMarginSoftmaxClassifier(n_components=40, metric_steps=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y, sample_weight=np.ones(len(y)))
    # One pilot run (scipy's 10 pairs), then the final run (50).
    assert memories == [10, 50]
