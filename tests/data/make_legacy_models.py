"""Fit small models and save pickles, skops files and their predictions.

Run once at commit 96b274e (the flat layout: ``sklmargin._estimators`` ...)
from the repository root: ``python tests/data/make_legacy_models.py``. Its
output is the fixture of ``tests/test_legacy_pickles.py``; rerunning it today
would save the new module paths and test nothing.
"""

import pickle

import numpy as np
from sklearn.datasets import load_iris
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import sklmargin as sm


def main():
    """Fit, pickle and save (overwrites the fixture: only at the old layout)."""
    import skops.io as sio  # an optional extra: imported only when run

    X, y = load_iris(return_X_y=True)
    rows = X[np.random.RandomState(0).choice(len(X), 20, replace=False)]
    kernel = {"n_components": 40, "random_state": 0}
    models = {
        "linear_amsoftmax": sm.MarginSoftmaxClassifier(),
        "linear_svsoftmax": sm.MarginSoftmaxClassifier(t=1.2),
        "linear_lsoftmax": sm.MarginSoftmaxClassifier(loss="l-softmax"),
        "kernel_nystroem": make_pipeline(
            StandardScaler(), sm.KernelMarginSoftmaxClassifier(**kernel)
        ),
        "kernel_fourier": sm.KernelMarginSoftmaxClassifier(
            kernel_approximation="orf", **kernel
        ),
        "linear_cv": sm.MarginSoftmaxClassifierCV(cv=3),
        "kernel_cv": sm.KernelMarginSoftmaxClassifierCV(
            n_components=30, random_state=0
        ),
        "openset": sm.OpenSetClassifier(sm.MarginSoftmaxClassifier(), cv=3),
    }
    saved = {"X": rows}
    for name, model in models.items():
        model.fit(X, y)
        saved[name] = np.frombuffer(pickle.dumps(model, protocol=4), dtype=np.uint8)
        saved["pred_" + name] = model.predict(rows)
        if hasattr(model, "predict_proba"):
            saved["proba_" + name] = model.predict_proba(rows)
        else:
            saved["proba_" + name] = model.predict(rows)
    sio.dump(models["kernel_nystroem"], "tests/data/legacy_kernel_nystroem.skops")
    sio.dump(models["linear_svsoftmax"], "tests/data/legacy_linear_svsoftmax.skops")
    np.savez_compressed("tests/data/legacy_models.npz", **saved)


if __name__ == "__main__":  # pytest --doctest-modules imports this file: no side effect
    main()
