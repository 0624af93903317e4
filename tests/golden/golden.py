"""Byte-level golden record of NumPy results, for refactors that must not move a bit.

``python tests/golden/golden.py make`` writes ``golden_<kernel>.json``: SHA-256
hashes of ``coef_``, ``intercept_``, ``predict_proba``, ``score_samples``, the
CV estimators' ``scores_`` and the training objective's value and gradient at
fixed parameters, over losses x dtypes x dense/CSR x feature maps x weights.
``python tests/golden/golden.py check`` recomputes them and lists every
difference (exit status 1 when one differs).

Byte equality holds only on one machine with one BLAS kernel and one thread,
so this is a refactoring tool, not part of the test suite (whose tests compare
at the precision the algorithms guarantee). Run it as::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Haswell \
        python tests/golden/golden.py check
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import sklmargin
from sklmargin import (
    KernelMarginSoftmaxClassifier,
    KernelMarginSoftmaxClassifierCV,
    MarginSoftmaxClassifier,
    MarginSoftmaxClassifierCV,
    OpenSetClassifier,
)

LOSSES = ("softmax", "normface", "am-softmax", "arcface", "l-softmax", "a-softmax")


def digest(array):
    """SHA-256 of an array's dtype, shape and bytes (C order)."""
    array = np.ascontiguousarray(np.asarray(array))
    h = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    h.update(array.tobytes())
    return h.hexdigest()[:24]


def data(dtype, sparse, seed=0):
    rng = np.random.default_rng(seed)
    n, d, k = 150, 6, 3
    centres = rng.normal(scale=2.0, size=(k, d))
    y = rng.integers(k, size=n)
    X = (centres[y] + rng.normal(size=(n, d))).astype(dtype)
    X_new = (centres[rng.integers(k, size=40)] + rng.normal(size=(40, d))).astype(dtype)
    if sparse:
        X[np.abs(X) < 0.5] = 0
        X = sp.csr_matrix(X)
        X_new[np.abs(X_new) < 0.5] = 0
        X_new = sp.csr_matrix(X_new)
    weights = rng.integers(1, 4, size=n).astype(np.float64)
    return X, y, X_new, weights


def objective_of(estimator, X, y, sample_weight):
    """The training objective a fit of ``estimator`` on (X, y) minimises.

    The one place that names the package's internals: a refactor that renames
    them edits this function, never the hashes.
    """
    from sklmargin.objective import LinearMarginObjective
    from sklmargin.objective._rows import lift_constant, prepare_rows, row_norms

    est = estimator
    margin, m, s, _ = est._validate_hyperparameters()
    Xc, classes, y_enc, sw = est._check_training_data(X, y, sample_weight)
    features = Xc
    norms = row_norms(features) if margin.uses_angle else None
    constant = (
        lift_constant(norms, features.shape[1], sw, est.constant_feature)
        if margin.normalizes_X
        else 0.0
    )
    rows = prepare_rows(
        features, normalize=margin.uses_angle, constant=constant, norms=norms
    )
    return LinearMarginObjective(
        rows, y_enc, len(classes), sw, margin, m, s, est.C, est.fit_intercept
    )


def records():
    out = {}

    def put(key, **arrays):
        for name, value in arrays.items():
            out[f"{key}|{name}"] = digest(value)

    for dtype in (np.float64, np.float32):
        for sparse in (False, True):
            X, y, X_new, weights = data(dtype, sparse)
            for weighted in (False, True):
                sw = weights if weighted else None
                layout = "csr" if sparse else "dense"
                tag = f"{np.dtype(dtype).name}|{layout}|w={weighted}"
                for loss in LOSSES:
                    est = MarginSoftmaxClassifier(loss=loss, random_state=0)
                    est.fit(X, y, sample_weight=sw)
                    put(
                        f"linear|{loss}|{tag}",
                        coef=est.coef_,
                        intercept=est.intercept_,
                        constant=est.constant_coef_,
                        proba=est.predict_proba(X_new),
                        score_samples=est.score_samples(X_new),
                        n_iter=np.asarray(est.n_iter_),
                    )
                    objective = objective_of(est, X, y, sw)
                    rng = np.random.default_rng(1)
                    params = rng.normal(size=objective.layout.n_params)
                    value, grad = objective.loss_gradient(params)
                    put(
                        f"objective|{loss}|{tag}",
                        value=np.asarray(value, dtype=np.float64),
                        grad=grad,
                    )
                for approximation in ("nystroem", "rff"):
                    for metric in (None, "diagonal", "full"):
                        if sparse and metric == "full":
                            continue
                        est = KernelMarginSoftmaxClassifier(
                            kernel_approximation=approximation,
                            metric=metric,
                            n_components=60,
                            random_state=0,
                        )
                        est.fit(X, y, sample_weight=sw)
                        put(
                            f"kernel|{approximation}|{metric}|{tag}",
                            coef=est.coef_,
                            intercept=est.intercept_,
                            proba=est.predict_proba(X_new),
                            score_samples=est.score_samples(X_new),
                        )
                if not sparse:
                    cv = MarginSoftmaxClassifierCV(cv=3, random_state=0)
                    cv.fit(X, y, sample_weight=sw)
                    put(
                        f"linear_cv|{tag}",
                        scores=cv.scores_,
                        coef=cv.estimator_.coef_,
                        temperature=np.asarray(cv.temperature_),
                        proba=cv.predict_proba(X_new),
                        score_samples=cv.score_samples(X_new),
                    )
                    kcv = KernelMarginSoftmaxClassifierCV(
                        cv=3, n_components=60, random_state=0, ss=[8.0, 16.0]
                    )
                    kcv.fit(X, y, sample_weight=sw)
                    put(
                        f"kernel_cv|{tag}",
                        scores=kcv.scores_,
                        coef=kcv.estimator_.coef_,
                        proba=kcv.predict_proba(X_new),
                    )
                    oset = OpenSetClassifier(
                        KernelMarginSoftmaxClassifier(
                            n_components=60, random_state=0, metric=None
                        ),
                        cv=3,
                    )
                    oset.fit(X, y, sample_weight=sw)
                    put(
                        f"openset|{tag}",
                        predict=oset.predict(X_new),
                        score_samples=oset.score_samples(X_new),
                    )
    return out


def main(argv):
    mode = argv[1] if len(argv) > 1 else "check"
    kernel = os.environ.get("OPENBLAS_CORETYPE", "default").lower()
    path = Path(__file__).with_name(f"golden_{kernel}.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = records()
    if mode == "make":
        path.write_text(json.dumps(got, indent=0, sort_keys=True) + "\n")
        print(f"wrote {len(got)} hashes to {path} (sklmargin {sklmargin.__version__})")
        return 0
    want = json.loads(path.read_text())
    differ = sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))
    for key in differ:
        print("DIFFERS", key)
    print(f"{len(want) - len(differ)}/{len(want)} hashes identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
