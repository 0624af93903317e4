"""Tests of the random Fourier feature map (sklmargin.features._fourier)."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklmargin._utils import blocks
from sklmargin.features._fourier import RandomFourierFeatures


@parametrize_with_checks(
    [
        RandomFourierFeatures(orthogonal=True, random_state=0),
        RandomFourierFeatures(orthogonal=False, random_state=0),
    ]
)
def test_sklearn_conformance(estimator, check):
    check(estimator)


# --------------------------------------------------------------------------------------
# Kernel approximation quality
# --------------------------------------------------------------------------------------

# Eight seeds per mean: measured over 30 disjoint groups of eight seeds, the ratios
# asserted below stayed <= 0.53 (width x4, theory 0.5) and <= 0.85 (ORF / RFF, mean
# ~0.80), so the thresholds 0.65 and 0.9 hold with a margin.
SEEDS = range(8)


@pytest.fixture(scope="module")
def standardised_sample():
    rng = np.random.RandomState(0)
    X = rng.standard_normal((200, 10))
    return (X - X.mean(axis=0)) / X.std(axis=0)


def relative_kernel_error(X, n_components, orthogonal, seed):
    rff = RandomFourierFeatures(
        n_components=n_components, orthogonal=orthogonal, random_state=seed
    )
    Z = rff.fit_transform(X)
    K = rbf_kernel(X, gamma=rff.gamma_)
    return np.linalg.norm(Z @ Z.T - K) / np.linalg.norm(K)


def mean_kernel_error(X, n_components, orthogonal):
    return np.mean(
        [relative_kernel_error(X, n_components, orthogonal, s) for s in SEEDS]
    )


@pytest.mark.parametrize("orthogonal", [True, False])
def test_kernel_error_decreases_with_width(standardised_sample, orthogonal):
    errors = [
        mean_kernel_error(standardised_sample, width, orthogonal)
        for width in (100, 400, 1600)
    ]
    # Monte Carlo rate: 4x the width halves the error.
    assert errors[1] < 0.65 * errors[0]
    assert errors[2] < 0.65 * errors[1]


@pytest.mark.parametrize("n_components", [100, 400, 1600])
def test_orthogonal_features_beat_iid(standardised_sample, n_components):
    iid = mean_kernel_error(standardised_sample, n_components, orthogonal=False)
    orf = mean_kernel_error(standardised_sample, n_components, orthogonal=True)
    assert orf < 0.9 * iid


@pytest.mark.parametrize("orthogonal", [True, False])
def test_kernel_error_small_at_2000_components(standardised_sample, orthogonal):
    X = standardised_sample
    rff = RandomFourierFeatures(
        n_components=2000, orthogonal=orthogonal, random_state=0
    )
    Z = rff.fit_transform(X)
    K = rbf_kernel(X, gamma=rff.gamma_)
    # Over 200 seeds the worst cases were 0.097 (relative) and 0.13 (entry-wise).
    assert np.linalg.norm(Z @ Z.T - K) / np.linalg.norm(K) < 0.12
    assert np.abs(Z @ Z.T - K).max() < 0.2


def test_odd_column_keeps_estimate_unbiased():
    # With n_components=1 the whole map is the random-phase feature; averaged over
    # draws its Gram matrix must converge to the kernel.
    rng = np.random.RandomState(1)
    X = rng.standard_normal((5, 3))
    K = rbf_kernel(X, gamma=0.3)
    n_draws = 1000
    gram = np.zeros_like(K)
    for seed in range(n_draws):
        Z = RandomFourierFeatures(gamma=0.3, n_components=1, random_state=seed)
        Z = Z.fit_transform(X)
        gram += Z @ Z.T
    # Per-entry standard deviation of the mean is below 0.7 / sqrt(1000) = 0.022.
    assert_allclose(gram / n_draws, K, atol=0.1)


def test_orthogonal_blocks_are_orthogonal():
    n_features = 6
    rff = RandomFourierFeatures(gamma=0.5, n_components=30, random_state=0)
    W = rff.fit(np.zeros((3, n_features))).random_weights_
    assert W.shape == (n_features, 15)
    # Blocks of n_features columns: 6 + 6 + a truncated block of 3.
    for start in range(0, 15, n_features):
        block = W[:, start : start + n_features]
        gram = block.T @ block
        assert_allclose(gram - np.diag(np.diag(gram)), 0.0, atol=1e-12)
    # ...and distinct blocks are independent, hence not orthogonal to each other.
    assert np.abs(W[:, :n_features].T @ W[:, n_features : 2 * n_features]).max() > 0.1


# --------------------------------------------------------------------------------------
# gamma
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gamma_scale_matches_svc_definition(dtype):
    rng = np.random.RandomState(0)
    X = (rng.standard_normal((40, 7)) * [1, 2, 3, 4, 5, 6, 7] + 3).astype(dtype)
    rff = RandomFourierFeatures(n_components=10, random_state=0).fit(X)
    expected = 1.0 / (X.shape[1] * X.astype(np.float64).var())
    assert isinstance(rff.gamma_, float)
    assert_allclose(rff.gamma_, expected, rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_gamma_scale_weighted_equals_repeated_rows(sparse):
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 3, size=(20, 4))
    sw = rng.randint(0, 4, size=20)
    X_repeated = np.repeat(X, sw, axis=0)
    container = sp.csr_matrix if sparse else np.asarray
    weighted = RandomFourierFeatures(n_components=9, random_state=0)
    weighted.fit(container(X), sample_weight=sw)
    repeated = RandomFourierFeatures(n_components=9, random_state=0)
    repeated.fit(container(X_repeated))
    assert_allclose(weighted.gamma_, repeated.gamma_, rtol=1e-12)
    assert_allclose(weighted.gamma_, 1.0 / (4 * X_repeated.var()), rtol=1e-12)
    assert_allclose(weighted.transform(X), repeated.transform(X), rtol=1e-10)


def test_gamma_scale_unit_weights_are_no_weights():
    rng = np.random.RandomState(0)
    X = rng.standard_normal((15, 3))
    a = RandomFourierFeatures(random_state=0).fit(X, sample_weight=np.full(15, 2.5))
    b = RandomFourierFeatures(random_state=0).fit(X)
    assert_allclose(a.gamma_, b.gamma_, rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_gamma_scale_constant_data(sparse):
    X = np.full((6, 3), 2.5)
    X = sp.csr_matrix(X) if sparse else X
    rff = RandomFourierFeatures(n_components=4, random_state=0).fit(X)
    assert rff.gamma_ == 1.0


def test_float_gamma_is_used_as_given():
    X = np.random.RandomState(0).standard_normal((10, 3))
    rff = RandomFourierFeatures(gamma=0.25, n_components=8, random_state=0).fit(X)
    assert rff.gamma_ == 0.25
    # The frequencies are N(0, I) draws scaled by sqrt(2 gamma).
    unit = RandomFourierFeatures(gamma=0.5, n_components=8, random_state=0).fit(X)
    assert_allclose(rff.random_weights_, np.sqrt(0.5) * unit.random_weights_)


def test_frequencies_do_not_depend_on_the_samples():
    rng = np.random.RandomState(0)
    X = rng.standard_normal((30, 4))
    a = RandomFourierFeatures(gamma=1.0, n_components=11, random_state=3).fit(X)
    b = RandomFourierFeatures(gamma=1.0, n_components=11, random_state=3).fit(
        X[:2] * 10
    )
    assert_array_equal(a.random_weights_, b.random_weights_)
    assert_array_equal(a.random_offset_, b.random_offset_)


# --------------------------------------------------------------------------------------
# Shapes, dtypes, blocking, determinism
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_components", [1, 2, 3, 7, 8, 25])
@pytest.mark.parametrize("orthogonal", [True, False])
def test_output_width_and_norms(n_components, orthogonal):
    X = np.random.RandomState(0).standard_normal((12, 4))
    rff = RandomFourierFeatures(
        n_components=n_components, orthogonal=orthogonal, random_state=0
    )
    Z = rff.fit_transform(X)
    assert Z.shape == (12, n_components)
    assert np.all(np.isfinite(Z))
    n_pairs, n_odd = divmod(n_components, 2)
    assert rff.random_weights_.shape == (4, n_pairs + n_odd)
    assert rff.random_offset_.shape == (n_odd,)
    assert len(rff.get_feature_names_out()) == n_components
    squared_norms = np.sum(Z**2, axis=1)
    if n_odd == 0:
        assert_allclose(squared_norms, 1.0, rtol=1e-12)
    else:
        D = n_components
        assert np.all(squared_norms >= (D - 1) / D - 1e-12)
        assert np.all(squared_norms <= (D + 1) / D + 1e-12)


def test_float32_preserved():
    rng = np.random.RandomState(0)
    X64 = rng.standard_normal((50, 5))
    X32 = X64.astype(np.float32)
    rff32 = RandomFourierFeatures(n_components=21, random_state=0).fit(X32)
    Z32 = rff32.transform(X32)
    assert Z32.dtype == np.float32
    assert rff32.random_weights_.dtype == np.float32
    Z64 = RandomFourierFeatures(n_components=21, random_state=0).fit_transform(X64)
    assert Z64.dtype == np.float64
    assert_allclose(Z32, Z64, atol=1e-5)
    # float32 data through a float64 fit: computed in float32 as well.
    rff64 = RandomFourierFeatures(n_components=21, random_state=0).fit(X64)
    assert rff64.transform(X32).dtype == np.float32
    assert rff64.transform(X64.astype(np.int64)).dtype == np.float64


@pytest.mark.parametrize("block_rows", [1, 7])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_components", [10, 11])
def test_blocked_transform_equals_one_shot(
    monkeypatch, block_rows, sparse, n_components
):
    rng = np.random.RandomState(0)
    X = rng.standard_normal((53, 6))
    X = sp.csr_matrix(X) if sparse else X
    rff = RandomFourierFeatures(n_components=n_components, random_state=0)
    one_shot = rff.fit_transform(X)
    gamma = rff.gamma_
    # Budget for `block_rows` rows of projections: 53 = 7 * 7 + 4 exercises a
    # remainder block. It also shrinks the blocks of the variance in fit.
    n_frequencies = rff.random_weights_.shape[1]
    monkeypatch.setattr(blocks, "BLOCK_BYTES", block_rows * 8 * n_frequencies)
    assert rff.gamma_ == gamma
    blocked = rff.transform(X)
    refitted = rff.fit_transform(X)
    # The variance reduces per-row sums once, so gamma_ is bitwise block-invariant.
    assert rff.gamma_ == gamma
    # Transform: one BLAS call per block. Bitwise equal with OpenBLAS here, but a
    # one-row block may go through GEMV instead of GEMM and round differently.
    assert_allclose(blocked, one_shot, rtol=0, atol=1e-14)
    assert_allclose(refitted, one_shot, rtol=0, atol=1e-14)


def test_sparse_input_matches_dense():
    rng = np.random.RandomState(0)
    X = rng.standard_normal((30, 8)) * (rng.uniform(size=(30, 8)) < 0.3)
    dense = RandomFourierFeatures(n_components=15, random_state=0)
    sparse = RandomFourierFeatures(n_components=15, random_state=0)
    Z_dense = dense.fit_transform(X)
    Z_sparse = sparse.fit_transform(sp.csr_matrix(X))
    assert_allclose(sparse.gamma_, dense.gamma_, rtol=1e-12)
    assert_allclose(Z_sparse, Z_dense, atol=1e-13)
    assert_allclose(sparse.transform(sp.csc_array(X)), Z_dense, atol=1e-13)


@pytest.mark.parametrize("orthogonal", [True, False])
def test_deterministic_given_random_state(orthogonal):
    X = np.random.RandomState(0).standard_normal((10, 3))

    def features(random_state):
        rff = RandomFourierFeatures(
            n_components=9, orthogonal=orthogonal, random_state=random_state
        )
        return rff.fit_transform(X)

    assert_array_equal(features(42), features(42))
    assert_array_equal(features(42), features(np.random.RandomState(42)))
    assert not np.allclose(features(42), features(43))
    assert not np.allclose(features(None), features(None))


def test_feature_names_from_dataframe():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [1.0, 0.0, 3.0]})
    rff = RandomFourierFeatures(n_components=3, random_state=0).fit(df)
    assert_array_equal(rff.feature_names_in_, ["a", "b"])
    assert_array_equal(
        rff.get_feature_names_out(),
        [f"randomfourierfeatures{i}" for i in range(3)],
    )
    out = rff.set_output(transform="pandas").transform(df)
    assert list(out.columns) == list(rff.get_feature_names_out())


# --------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("gamma", [0, 0.0, -1.0, np.inf, np.nan, "auto", None])
def test_invalid_gamma(gamma):
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="gamma"):
        RandomFourierFeatures(gamma=gamma).fit(X)


@pytest.mark.parametrize("n_components", [0, -2, 2.5, "10", None])
def test_invalid_n_components(n_components):
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="n_components"):
        RandomFourierFeatures(n_components=n_components).fit(X)


def test_init_only_stores():
    # Invalid values are accepted by the constructor and rejected by fit.
    rff = RandomFourierFeatures(gamma=-1.0, n_components=0)
    assert rff.gamma == -1.0 and rff.n_components == 0


@pytest.mark.parametrize(
    "sample_weight, match",
    [(np.array([1.0, -1.0, 1.0]), "(?i)negative"), (np.zeros(3), "zero")],
)
def test_invalid_sample_weight(sample_weight, match):
    X = np.arange(6.0).reshape(3, 2)
    with pytest.raises(ValueError, match=match):
        RandomFourierFeatures().fit(X, sample_weight=sample_weight)


# --------------------------------------------------------------------------------------
# One implementation: far float32 rows on a device take NumPy's float64 guard
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("float64", [True, False], ids=["float64", "no-float64"])
@pytest.mark.parametrize("kind", ["nystroem", "fourier"])
def test_far_float32_rows_map_as_numpy_on_a_device(kind, float64, monkeypatch):
    """Rows whose float32 kernel or projection would overflow are computed in
    float64 on the device, or on the host where it has none (Apple's MPS), in
    NumPy's order: array-api-strict (NumPy underneath) gives NumPy's features.
    """
    import os

    import sklearn

    import sklmargin._utils.array_api as array_api
    from sklmargin import NystroemFeatures

    strict = pytest.importorskip("array_api_strict")
    if os.environ.get("SCIPY_ARRAY_API") != "1":
        pytest.skip("scikit-learn's array_api_dispatch needs SCIPY_ARRAY_API=1")
    X = np.random.default_rng(0).standard_normal((60, 4)).astype(np.float32)
    far = X * np.float32(1e37)  # beyond both maps' float32 guards
    # (A given gamma: "scale" accumulates in float32 on a device without
    # float64, which is not the point here.)
    if kind == "nystroem":
        feature_map = NystroemFeatures(n_components=20, gamma=0.5, random_state=0)
    else:
        feature_map = RandomFourierFeatures(n_components=21, gamma=0.5, random_state=0)
    expected = feature_map.fit(X).transform(far)
    if not float64:
        monkeypatch.setattr(array_api, "float64_supported", lambda xp, device: False)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = feature_map.fit(strict.asarray(X))
        mapped = fitted.transform(strict.asarray(far))
    assert mapped.dtype == strict.float32
    assert np.all(np.isfinite(expected))
    assert_array_equal(np.asarray(mapped), expected)


@pytest.mark.parametrize("batch", [3, 2**20])
def test_exact_sums_add_to_fsum_however_split(monkeypatch, batch):
    # What each Dask chunk sends adds, over any split, to the float
    # math.fsum gives for all the values at once: magnitudes from subnormal
    # to near overflow, both signs, across batches.
    import math

    from sklmargin.features import _gamma

    monkeypatch.setattr(_gamma, "_EXACT_BATCH", batch)
    rng = np.random.default_rng(0)
    values = rng.standard_normal(3000) * 10.0 ** rng.integers(-320, 300, 3000)
    edges = [5e-324, -5e-324, 2.2250738585072014e-308, 1.7e308, -1.7e308, -0.0]
    values = np.concatenate([values, edges, np.full(50, 1.0 + 2.0**-52)])
    for n_parts in (1, 3, 7, 64):
        parts = np.array_split(rng.permutation(values), n_parts)
        total = _gamma.float_of_exact(sum(_gamma.exact_sum(p) for p in parts))
        assert total == math.fsum(values)
    assert _gamma.float_of_exact(_gamma.exact_sum([])) == 0.0
    for bad in ([1.0, np.inf], [np.inf, -np.inf], [1.0, np.nan]):
        with pytest.raises(ValueError, match="not finite"):
            _gamma.exact_sum(bad)


def test_class_totals_of_integer_weights_are_the_exact_sums(monkeypatch):
    # Integer weights whose total stays below 2**53 take bincount (exact
    # there); others, and the same weights when the shortcut is off, the
    # exact sums: the same integers either way.
    from sklmargin._utils import validation
    from sklmargin.features import _gamma

    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 1000)
    cases = [
        np.ones(1000),
        rng.integers(0, 2**40, 1000).astype(float),  # total near 2**50
        rng.integers(0, 2**52, 1000).astype(float),  # total beyond 2**53
        rng.integers(0, 5, 1000) + 0.5,
    ]
    for weights in cases:
        totals = validation.exact_class_totals(y, weights, 6)
        assert totals == [_gamma.exact_sum(weights[y == j]) for j in range(6)]
        assert totals[5] == 0
    # the shortcut is taken for unit weights (no exact sum called)
    monkeypatch.setattr(_gamma, "exact_sum", None)
    assert (
        validation.exact_class_totals(y, np.ones(1000), 6)[0]
        == _gamma.exact_integers([np.sum(y == 0)])[0]
    )
