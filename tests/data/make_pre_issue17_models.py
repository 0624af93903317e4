"""Fit small models and save pickles, a skops file and their predictions.

Run once at commit ae33e4e, the parent of d6c350a (issue 17, which added the
kernel estimator's ``compute_dtype`` parameter and fitted ``compute_dtype_``,
and the kernel CV's ``compute_dtype`` and ``centres``), from the root of a
worktree of that commit, with the current checkout's package out of the way::

    git worktree add --detach /tmp/legacy-old ae33e4e
    cd /tmp/legacy-old
    PYTHONPATH=$PWD python <this checkout>/tests/data/make_pre_issue17_models.py

It writes ``pre_issue17_models.npz`` and ``pre_issue17_kernel_rff_float32.skops``
into the current directory; they were copied into ``tests/data``. The output
is the fixture of ``tests/test_legacy_pickles.py``; rerunning it at a later
commit would save today's layout and test nothing. (numpy 2.4, scipy 1.17,
scikit-learn 1.9.1 and skops 0.16 made the files.)
"""

import pickle

import numpy as np
from sklearn.datasets import load_iris
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import sklmargin as sm


def main():
    """Fit, pickle and save into the current directory."""
    import skops.io as sio  # an optional extra: imported only when run

    X, y = load_iris(return_X_y=True)
    X32 = X.astype(np.float32)
    rows = X[np.random.RandomState(0).choice(len(X), 20, replace=False)]
    kernel = {"n_components": 40, "random_state": 0}
    # (model, training rows): a float32 fit too, whose map computed in float32
    models = {
        "kernel_nystroem": (
            make_pipeline(StandardScaler(), sm.KernelMarginSoftmaxClassifier(**kernel)),
            X,
        ),
        "kernel_fourier": (
            sm.KernelMarginSoftmaxClassifier(kernel_approximation="orf", **kernel),
            X,
        ),
        "kernel_rff_float32": (
            sm.KernelMarginSoftmaxClassifier(kernel_approximation="rff", **kernel),
            X32,
        ),
        "kernel_nystroem_float32": (sm.KernelMarginSoftmaxClassifier(**kernel), X32),
        "kernel_cv": (
            sm.KernelMarginSoftmaxClassifierCV(n_components=30, random_state=0),
            X,
        ),
        "linear_amsoftmax": (sm.MarginSoftmaxClassifier(), X),
        "linear_cv": (sm.MarginSoftmaxClassifierCV(cv=3), X),
    }
    saved = {"X": rows}
    for name, (model, X_train) in models.items():
        model.fit(X_train, y)
        saved[name] = np.frombuffer(pickle.dumps(model, protocol=4), dtype=np.uint8)
        # predictions on float64 rows and on float32 rows (the input's dtype
        # decided the precision of the old map)
        for suffix, X_rows in (("", rows), ("_f32", rows.astype(np.float32))):
            saved["pred" + suffix + "_" + name] = model.predict(X_rows)
            saved["proba" + suffix + "_" + name] = model.predict_proba(X_rows)
    sio.dump(models["kernel_rff_float32"][0], "pre_issue17_kernel_rff_float32.skops")
    np.savez_compressed("pre_issue17_models.npz", **saved)


if __name__ == "__main__":  # pytest --doctest-modules imports this file: no side effect
    main()
