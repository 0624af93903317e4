"""Models saved by the flat layout (before the subpackages) still load and predict.

``tests/data/legacy_models.npz`` holds pickles of eight fitted models and their
predictions on 20 rows, made by ``tests/data/make_legacy_models.py`` at commit
96b274e, when the classes lived in ``sklmargin._estimators``, ``sklmargin._kernel``,
``sklmargin._margins`` ... The ``.skops`` files were saved by skops at the same
commit. Loading needs :mod:`sklmargin._legacy`'s finder; predicted labels must
be identical and probabilities equal to round-off (predict now computes the
cosines through ``lifted_cosines``, normalising the prototypes before the
product: measured at most 1.2e-15), and a refit today the same model.
"""

import pickle
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris

import sklmargin
from sklmargin._legacy import LEGACY_MODULES

DATA = Path(__file__).resolve().parent / "data"
SAVED = np.load(DATA / "legacy_models.npz")
NAMES = sorted(
    k for k in SAVED.files if k != "X" and not k.startswith(("proba_", "pred_"))
)


def _load(name):
    with warnings.catch_warnings():
        # a newer scikit-learn than the one that pickled warns, and still loads
        warnings.simplefilter("ignore", UserWarning)
        return pickle.loads(SAVED[name].tobytes())


def _scores(model, X):
    return model.predict_proba(X) if hasattr(model, "predict_proba") else None


def test_the_fixture_names_the_old_modules():
    """The pickles really do reference the flat layout's module paths."""
    raw = b"".join(SAVED[name].tobytes() for name in NAMES)
    for old in ("sklmargin._estimators", "sklmargin._kernel", "sklmargin._margins"):
        assert old.encode() in raw
    assert len(NAMES) == 8


@pytest.mark.parametrize("name", NAMES)
def test_old_pickle_loads_and_predicts_identically(name):
    model = _load(name)
    X = SAVED["X"]
    np.testing.assert_array_equal(model.predict(X), SAVED["pred_" + name])
    np.testing.assert_allclose(
        _scores(model, X), SAVED["proba_" + name], rtol=1e-12, atol=1e-14
    )


@pytest.mark.parametrize("name", NAMES)
def test_refit_today_gives_the_model_saved_then(name):
    """The move changed no number: a refit equals the flat layout's model."""
    X, y = load_iris(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = clone(_load(name)).fit(X, y)
    np.testing.assert_allclose(
        _scores(model, SAVED["X"]), SAVED["proba_" + name], rtol=1e-12, atol=1e-14
    )


def test_old_module_path_is_the_new_module():
    import sklmargin._kernel as old  # noqa: PLC0415

    assert old is sys.modules["sklmargin.estimators._kernel"]
    assert old.KernelMarginSoftmaxClassifier is sklmargin.KernelMarginSoftmaxClassifier
    from sklmargin._margins import AMSoftmax, Margin  # the round-2 docs' import

    assert issubclass(AMSoftmax, Margin) and Margin is sklmargin.Margin


@pytest.mark.parametrize("old", sorted(LEGACY_MODULES))
def test_every_old_module_path_resolves(old):
    # (the Dask and ONNX modules import Dask/skl2onnx only when called)
    module = __import__(old, fromlist=["_"])
    assert module.__name__ == LEGACY_MODULES[old]


@pytest.mark.parametrize(
    "path", ["legacy_kernel_nystroem.skops", "legacy_linear_svsoftmax.skops"]
)
def test_old_skops_file_loads_with_the_trusted_types(path):
    sio = pytest.importorskip("skops.io")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = sio.load(DATA / path, trusted=sklmargin.skops_trusted_types())
    key = path.removeprefix("legacy_").removesuffix(".skops")
    np.testing.assert_allclose(
        model.predict_proba(SAVED["X"]), SAVED["proba_" + key], rtol=1e-12, atol=1e-14
    )
