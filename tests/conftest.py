"""Test session settings and shared data."""

import os

# scikit-learn's array_api_dispatch refuses to run without scipy's array API
# mode, which scipy reads when it is first imported: set it before anything
# imports scipy (tests/test_array_api.py and the conformance suite's array API
# checks, which skip without it). NumPy inputs are unaffected.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

# tests/data holds fixtures and the script that made them (run by hand at an
# old commit; --doctest-modules would import it, and it needs skops).
collect_ignore_glob = ["data/*"]


@pytest.fixture(autouse=True, scope="session")
def _single_threaded_blas():
    # The suite fits thousands of tiny models: BLAS threads only add
    # synchronisation there, and on a loaded 2-core machine they oversubscribe
    # (measured: the conformance suite took 10x longer with 2 threads).
    with threadpool_limits(limits=1):
        yield


@pytest.fixture(scope="session")
def digits():
    """Open-set split of digits: 0-5 known (train/test halves), 6-9 unknown.

    Returns ``X_train, y_train, X_known_test, X_unknown`` (standardised).
    """
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    known = y < 6
    X_known, y_known = X[known], y[known]
    return X_known[::2], y_known[::2], X_known[1::2], X[~known]


# Tests left out of the default run (``python -m pytest``) and run by
# ``python -m pytest -m slow`` (CI runs both), chosen by their measured
# durations (``python -m pytest --durations=0`` on a 2-core machine): the
# default run stays under five minutes there. Each entry is a substring of
# the test ids it marks; a lighter configuration of each marked check stays
# in the default run (the kernel estimator's conformance at its defaults,
# the linear estimator's for softmax, AM-Softmax and ArcFace, the linear CV
# search's), and CI runs every marked test.
SLOW_BY_DURATION = (
    # check_estimator on the kernel CV search at its defaults: 121 s.
    "test_cv.py::test_sklearn_conformance[KernelMarginSoftmaxClassifierCV()-",
    "test_cv.py::test_sklearn_conformance[KernelMarginSoftmaxClassifierCV(cv=2,gammas=['scale'],metric='diagonal'",
    "test_cv.py::test_sklearn_conformance[MarginSoftmaxClassifierCV(cv=2,ms=[0.0,0.05],refit=False",
    # the gallery scripts (CI also runs them in the documentation build): 45 s.
    "test_examples.py::test_example_runs",
    # the array API CV searches against NumPy's: 38 s.
    "test_array_api.py::test_cv_search_equals_the_numpy_search",
    # the kernel estimator's conformance beyond its defaults: about 70 s.
    "test_common.py::test_sklearn_conformance[KernelMarginSoftmaxClassifier(kernel_approximation=",
    "test_common.py::test_sklearn_conformance[KernelMarginSoftmaxClassifier(t=1.2)",
    "test_common.py::test_sklearn_conformance[KernelMarginSoftmaxClassifier(loss=",
    "test_common.py::test_sklearn_conformance[KernelMarginSoftmaxClassifier(centres=",
    "test_common.py::test_sklearn_conformance[KernelMarginSoftmaxClassifier(compute_dtype=",
    "test_common.py::test_sklearn_conformance[KernelMarginSoftmaxClassifier(metric=",
    # SV-Softmax variants of the linear conformance: 10 s.
    "test_common.py::test_sklearn_conformance[MarginSoftmaxClassifier(t=1.2)",
    "test_common.py::test_sklearn_conformance[MarginSoftmaxClassifier(loss='arcface',t=1.2)",
    # Dask on a local cluster, and the heavier in-memory equalities: 42 s.
    "test_dask.py::test_cluster_",
    "test_dask.py::test_documented_example_runs",
    "test_dask.py::test_nystroem_selects_the_in_memory_centres",
    "test_dask.py::test_matches_in_memory_fit",
    "test_dask.py::test_streamed_chunks_equal_persisted",
    # the small-grid kernel CV search's conformance (25 s) and the softmax
    # search's (7 s): the linear AM-Softmax search's stays.
    "test_cv.py::test_sklearn_conformance[KernelMarginSoftmaxClassifierCV(cv=2,gammas=['scale',0.5]",
    "test_cv.py::test_sklearn_conformance[MarginSoftmaxClassifierCV(Cs=",
    # the linear conformance of the angular and multiplicative losses beyond
    # AM-Softmax, softmax and ArcFace: 12 s.
    "test_common.py::test_sklearn_conformance[MarginSoftmaxClassifier(loss='normface')",
    "test_common.py::test_sklearn_conformance[MarginSoftmaxClassifier(loss='l-softmax')",
    "test_common.py::test_sklearn_conformance[MarginSoftmaxClassifier(loss='a-softmax')",
    # a collapsing L-Softmax fit and compare's plots and width tables: 19 s.
    "test_reliability.py::test_collapsed_l_softmax_warns_and_names_the_cause",
    "test_compare_runs.py::test_plot_keeps_title_legend_and_labels_inside_and_apart",
    "test_compare_rbf.py::test_tables_state_the_width_and_the_gamma_bases",
    "test_compare_rbf.py::test_a_tuned_gamma_overrides_auto_and_reads_as_its_multiple",
    # three default kernel fits (NumPy, Dask, torch) on 2,000 rows: 12 s loaded.
    "test_centre_stability.py::test_default_labels_agree_in_memory_on_dask_and_on_torch",
)


def pytest_collection_modifyitems(config, items):
    """Mark the tests of :data:`SLOW_BY_DURATION` slow."""
    for item in items:
        if any(pattern in item.nodeid for pattern in SLOW_BY_DURATION):
            item.add_marker(pytest.mark.slow)
