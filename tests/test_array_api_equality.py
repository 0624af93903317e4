"""Array API fits against the NumPy fit, judged by the NumPy fit's own round-off.

``tests/test_array_api.py`` asserts tight bounds (1e-8 float64, 1e-4 float32)
where the NumPy fit is stable under round-off. This file covers every
configuration, the unstable ones included: A-Softmax (kinked ψ), SV-Softmax's
``t=1.2`` (the mask rounds), the float32 cosine losses, ArcFace's default CV
path. There L-BFGS stops at ``tol * s`` on a path that round-off decides, so
no fixed bound holds, and the claim of ``docs/array_api.rst`` ("Equality with
the NumPy fit") is relative: a namespace fit differs from the NumPy fit by no
more than the NumPy fit differs from itself when ``X`` moves by 2 ulp. The
test asserts it as ``|Δ predict_proba| <= FACTOR * sensitivity + FLOOR``, the
sensitivity being the largest change over three 2-ulp perturbations; the one
search whose spread three perturbations do not measure (``CHAOTIC_SEARCHES``)
is asserted to give valid probabilities only.

Data (as in ``tests/test_array_api.py``): 300 standardised rows of
``make_classification`` (8 features, 3 classes), default settings,
``random_state=0``. A few configurations run in the default suite; the whole
table and the CV searches are marked ``slow`` (``python -m pytest -m slow
tests/test_array_api_equality.py``, about 40 s).

Run as a script, the file prints the tables of ``docs/array_api.rst`` and
``benchmarks/results_array_api.md`` (one perturbation, the first seed)::

    python tests/test_array_api_equality.py        # the fits
    python tests/test_array_api_equality.py --cv   # the CV searches

(until issue 26 this was ``benchmarks/array_api_equality.py``). Needs torch and
array-api-strict (``pip install sklmargin[array-api]`` and torch); the tests
skip, naming the package, without them.
"""

import os

# scikit-learn's dispatch needs scipy's array API mode, read when scipy is first
# imported (conftest.py sets it for the suite; this is for the script).
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import sklearn  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklmargin import (  # noqa: E402
    KernelMarginSoftmaxClassifier,
    KernelMarginSoftmaxClassifierCV,
    MarginSoftmaxClassifier,
    MarginSoftmaxClassifierCV,
)
from sklmargin.losses import registered_margins  # noqa: E402

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("SCIPY_ARRAY_API") != "1",
        reason="scikit-learn's array_api_dispatch needs SCIPY_ARRAY_API=1 "
        "set before scipy is imported",
    ),
    # The fits warn (ConvergenceWarning at tol * s, GridEdgeWarning): not the
    # subject here; tests/test_array_api.py checks what the namespace path warns.
    pytest.mark.filterwarnings("ignore"),
]

# "torch cuda" runs where a GPU is visible (skipped elsewhere, CI included).
NAMESPACES = ("array-api-strict", "torch cpu", "torch cuda")
#: Seeds of the 2-ulp perturbations; the first one is the printed table's.
PERTURBATION_SEEDS = (1, 2, 3)
#: A namespace fit may differ by FACTOR times the NumPy fit's own sensitivity
#: (one draw of round-off against the largest of three: measured ratios up to
#: 4 against a single perturbation) ...
FACTOR = 10.0
#: ... plus FLOOR machine epsilons (the stable fits differ by a few).
FLOOR = 100


def _configurations():
    """Every registered loss with and without SV-Softmax, and the two maps."""
    for margin in registered_margins():
        for t in (1.0, 1.2):
            yield (
                f"{margin.name}" + (" t=1.2" if t > 1 else ""),
                MarginSoftmaxClassifier(loss=margin.name, t=t, random_state=0),
            )
    for approximation in ("nystroem", "rff"):
        yield (
            f"kernel {approximation}",
            KernelMarginSoftmaxClassifier(
                kernel_approximation=approximation, n_components=100, random_state=0
            ),
        )


def _cv_configurations():
    """The searches of tests/test_array_api.py (their settings of issue 21), then
    two whose NumPy search is itself sensitive to round-off (AM-Softmax over s
    and m; ArcFace's default s path up to 160, refit=False)."""
    yield (
        "softmax Cs=0.1,1,10",
        MarginSoftmaxClassifierCV(loss="softmax", Cs=[0.1, 1.0, 10.0], cv=3),
    )
    yield (
        "normface ss=5,10,20",
        MarginSoftmaxClassifierCV(loss="normface", ss=[5.0, 10.0, 20.0], cv=3),
    )
    yield (
        "l-softmax Cs=0.1,1 refit=False",
        MarginSoftmaxClassifierCV(loss="l-softmax", Cs=[0.1, 1.0], cv=3, refit=False),
    )
    yield (
        "kernel nystroem 50, ss=50,100",
        KernelMarginSoftmaxClassifierCV(
            n_components=50, ss=[50.0, 100.0], cv=3, random_state=0
        ),
    )
    yield "kernel orf 50, ss=50,100, refit=False", KernelMarginSoftmaxClassifierCV(
        kernel_approximation="orf", n_components=50, ss=[50.0, 100.0], cv=3,
        refit=False, random_state=0,
    )  # fmt: skip
    yield (
        "am-softmax ss=10,30 ms=0,0.05",
        MarginSoftmaxClassifierCV(
            ss=[10.0, 30.0], ms=[0.0, 0.05], cv=3, random_state=0
        ),
    )
    yield (
        "arcface default path, refit=False",
        MarginSoftmaxClassifierCV(loss="arcface", cv=3, refit=False, random_state=0),
    )


CONFIGURATIONS = dict(_configurations())
CV_CONFIGURATIONS = dict(_cv_configurations())
#: Searches whose spread three perturbations do not measure: ArcFace's path up
#: to s=160 ends its fold fits at points that round-off picks among a few, and
#: under OpenBLAS's SkylakeX kernels the three NumPy perturbations moved the
#: probabilities by 4e-4 while array-api-strict's search chose another point
#: (8e-2; under the Haswell kernels the perturbations chose other points too).
#: For them only valid probabilities are asserted; the table shows the numbers.
CHAOTIC_SEARCHES = {"arcface default path, refit=False"}


# -- data, namespaces, fits ------------------------------------------------------
@functools.cache
def _data():
    X, y = make_classification(
        n_samples=300, n_features=8, n_informative=5, n_classes=3, random_state=0
    )
    return StandardScaler().fit_transform(X), y


def _perturbed(X, dtype, seed):
    """``X`` (float64) moved by about 2 ulp of ``dtype`` per entry, cast to it."""
    noise = np.random.default_rng(seed).standard_normal(X.shape)
    return (X * (1 + 2 * np.finfo(dtype).eps * noise)).astype(dtype)


def _converters():
    """``{name: convert}`` of the two namespaces (host arrays to theirs)."""
    import array_api_strict
    import torch

    torch.set_num_threads(1)  # one thread, as BLAS in the suite
    return {
        "array-api-strict": lambda a: array_api_strict.asarray(a),
        "torch cpu": lambda a: torch.asarray(a),
    }


def _converter(namespace):
    """One namespace's converter in a test; skips naming a missing package."""
    if namespace == "array-api-strict":
        xp = pytest.importorskip(
            "array_api_strict", reason="array-api-strict is not installed"
        )
        return xp.asarray
    torch = pytest.importorskip("torch", reason="torch is not installed")
    torch.set_num_threads(1)
    if namespace == "torch cuda":
        if not torch.cuda.is_available():
            pytest.skip("no CUDA device visible to torch")
        return functools.partial(torch.asarray, device="cuda")
    return torch.asarray


def _to_host(array):
    """A namespace's (CPU) array as a NumPy array."""
    if hasattr(array, "detach"):  # torch
        return array.detach().cpu().numpy()
    return np.asarray(array)


def _namespace_proba(estimator, convert, X, y, sample_weight=None):
    """``predict_proba`` on ``X`` of a fit under ``array_api_dispatch``, on the host."""
    with sklearn.config_context(array_api_dispatch=True):
        fitted = clone(estimator).fit(
            convert(X),
            convert(y),
            sample_weight=None if sample_weight is None else convert(sample_weight),
        )
        return fitted, _to_host(fitted.predict_proba(convert(X)))


def _largest(a, b):
    return float(np.max(np.abs(a - b)))


def _same_point(a, b):
    """Whether two searches chose the same point (gamma="scale" to round-off)."""
    names = [n for n in ("C_", "s_", "m_", "gamma_") if hasattr(a, n)]
    values = [(getattr(a, n), getattr(b, n)) for n in names]
    return all(
        u == v or (u is not None and v is not None and abs(u - v) <= 1e-12 * abs(v))
        for u, v in values
    )


@functools.cache
def _numpy_fit(name, dtype_name):
    """The NumPy fit's probabilities and their change under each perturbation."""
    X, y = _data()
    dtype = np.dtype(dtype_name)
    estimator = CONFIGURATIONS[name]
    reference = clone(estimator).fit(X.astype(dtype), y).predict_proba(X.astype(dtype))
    changes = [
        _largest(
            clone(estimator)
            .fit(_perturbed(X, dtype, seed), y)
            .predict_proba(X.astype(dtype)),
            reference,
        )
        for seed in PERTURBATION_SEEDS
    ]
    return reference, changes


@functools.cache
def _numpy_search(name, weighted):
    """The NumPy search, its probabilities and the perturbed searches."""
    X, y = _data()
    weights = np.arange(X.shape[0]) % 3 + 0.5 if weighted else None
    search = CV_CONFIGURATIONS[name]
    reference = clone(search).fit(X, y, sample_weight=weights)
    expected = reference.predict_proba(X)
    moved = [
        clone(search).fit(_perturbed(X, np.float64, seed), y, sample_weight=weights)
        for seed in PERTURBATION_SEEDS
    ]
    changes = [_largest(m.predict_proba(X), expected) for m in moved]
    stable_point = all(_same_point(m, reference) for m in moved)
    return reference, expected, changes, stable_point


def _bound(changes, dtype):
    return FACTOR * max(changes) + FLOOR * np.finfo(dtype).eps


# -- tests ---------------------------------------------------------------------
#: The default suite's share (about 3 s): one unstable configuration per kind.
QUICK = {
    ("a-softmax", "float64"),
    ("am-softmax t=1.2", "float32"),
    ("kernel rff", "float32"),
}


def _fit_cases():
    for dtype_name in ("float64", "float32"):
        for name in CONFIGURATIONS:
            marks = () if (name, dtype_name) in QUICK else (pytest.mark.slow,)
            yield pytest.param(name, dtype_name, marks=marks, id=f"{name}-{dtype_name}")


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize(("name", "dtype_name"), list(_fit_cases()))
def test_fit_differs_from_numpy_as_numpy_differs_from_itself(
    namespace, name, dtype_name
):
    convert = _converter(namespace)
    X, y = _data()
    dtype = np.dtype(dtype_name)
    reference, changes = _numpy_fit(name, dtype_name)
    _, proba = _namespace_proba(CONFIGURATIONS[name], convert, X.astype(dtype), y)
    assert proba.dtype == dtype
    assert np.all(np.isfinite(proba))
    difference = _largest(proba, reference)
    assert difference <= _bound(changes, dtype), (difference, changes)


@pytest.mark.slow
@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("name", list(CV_CONFIGURATIONS))
def test_search_differs_from_numpy_as_numpy_differs_from_itself(
    namespace, weighted, name
):
    convert = _converter(namespace)
    X, y = _data()
    weights = np.arange(X.shape[0]) % 3 + 0.5 if weighted else None
    reference, expected, changes, stable_point = _numpy_search(name, weighted)
    fitted, proba = _namespace_proba(
        CV_CONFIGURATIONS[name], convert, X, y, sample_weight=weights
    )
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    if name in CHAOTIC_SEARCHES:
        return
    difference = _largest(proba, expected)
    assert difference <= _bound(changes, np.float64), (difference, changes)
    if stable_point:  # where round-off does not move NumPy's choice, nor the device's
        assert _same_point(fitted, reference)


# -- the tables ----------------------------------------------------------------
def print_fit_table(namespaces):
    """The fits' table: |Δ predict_proba| per namespace, NumPy's 2-ulp change."""
    X, y = _data()
    print(
        "| configuration | dtype | array-api-strict | torch cpu | "
        "NumPy fit under a 2-ulp perturbation of X |"
    )
    print("|---|---|---|---|---|")
    for dtype in (np.float64, np.float32):
        Xd = X.astype(dtype)
        perturbed = _perturbed(X, dtype, PERTURBATION_SEEDS[0])
        for name, estimator in CONFIGURATIONS.items():
            reference = clone(estimator).fit(Xd, y).predict_proba(Xd)
            cells = []
            for convert in namespaces.values():
                proba = _namespace_proba(estimator, convert, Xd, y)[1]
                cells.append(f"{_largest(proba, reference):.1e}")
            sensitivity = clone(estimator).fit(perturbed, y).predict_proba(Xd)
            cells.append(f"{_largest(sensitivity, reference):.1e}")
            print(f"| {name} | {np.dtype(dtype).name} | " + " | ".join(cells) + " |")


def print_cv_table(namespaces):
    """The searches' table, and whether each chose the NumPy search's point."""
    X, y = _data()
    print(
        "| search | weights | array-api-strict | torch cpu | "
        "NumPy search under a 2-ulp perturbation of X | same point |"
    )
    print("|---|---|---|---|---|---|")
    perturbed = _perturbed(X, np.float64, PERTURBATION_SEEDS[0])
    for name, search in CV_CONFIGURATIONS.items():
        for weights in (None, np.arange(X.shape[0]) % 3 + 0.5):
            reference = clone(search).fit(X, y, sample_weight=weights)
            expected = reference.predict_proba(X)
            cells, same = [], []
            for convert in namespaces.values():
                fitted, proba = _namespace_proba(search, convert, X, y, weights)
                cells.append(f"{_largest(proba, expected):.1e}")
                same.append(_same_point(fitted, reference))
            moved = clone(search).fit(perturbed, y, sample_weight=weights)
            cells.append(
                f"{_largest(moved.predict_proba(X), expected):.1e}"
                + ("" if _same_point(moved, reference) else " (other point)")
            )
            cells.append("yes" if all(same) else "no")
            label = "none" if weights is None else "i % 3 + 0.5"
            print(f"| {name} | {label} | " + " | ".join(cells) + " |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cv", action="store_true", help="compare the CV searches")
    args = parser.parse_args(argv)
    namespaces = _converters()
    warnings.simplefilter("ignore")
    (print_cv_table if args.cv else print_fit_table)(namespaces)


if __name__ == "__main__":
    main()
