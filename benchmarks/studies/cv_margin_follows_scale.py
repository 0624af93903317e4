"""The linear search's default margin along its s path: constant, or following s.

One question (issue 39, the 384-d newcomer set): does
``MarginSoftmaxClassifierCV()`` get closer to ``LogisticRegressionCV()`` when
its default margin follows the scale as the linear default's does
(``m = m_0`` up to ``s_0``, ``m_0 s_0 / s`` above: the margin in logits
kept), and where do its fold fits and its refit stop? For each variant it
prints the test accuracy and log loss, the chosen ``(s, m)``, CPU seconds,
and per path point the mean held-out score and the folds' mean iterations
(``cv_results_["mean_n_iter"]``), then the refit's iterations.

Variants: ``follow`` (the default ``ms=None``: the pairs on the code of
commit ebc6756, where the margin follows s; on other code the default grid,
whatever it is), ``fixed`` (``ms=(0.05,)``: a constant margin along the path, the
old default), ``m0`` (``ms=(0.0, 0.05)``), and ``follow_uncapped``: ``follow``
with the fits at a looser tolerance than the estimator's (the path's, at
``path_tol``) stopped at ``tol * s``, not at the linear estimator's ``tol * 30``
for ``s m <= 1.5`` above ``s = 30`` (a patched ``gradient_tol``; the refit and
the folds' chosen models, at ``tol``, keep the cap).

``--datasets`` adds shared sets (standardised, as ``cv_vs_logregcv.py`` fits
them); the default is the 384-d newcomer set only.

Untimed exploration (accuracy, iterations); the timed comparison is
``benchmarks/cv_vs_logregcv.py``. Run from the repository root::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD \\
        python benchmarks/studies/cv_margin_follows_scale.py --variants follow,fixed
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from embeddings import newcomer_set  # noqa: E402
from sklearn.metrics import accuracy_score, log_loss  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklmargin import MarginSoftmaxClassifierCV  # noqa: E402
from sklmargin.compare.datasets import load_npz  # noqa: E402
from sklmargin.estimators import _base  # noqa: E402

VARIANTS = {
    "follow": None,
    "fixed": (0.05,),
    "m0": (0.0, 0.05),
    "follow_uncapped": None,
}
_capped = _base.gradient_tol


def _uncapped(estimator, margin, m, s):
    """``tol * s`` for the fits looser than the default ``tol`` (the path's)."""
    if s is not None and estimator.tol > 1e-4:
        return estimator.tol * s
    return _capped(estimator, margin, m, s)


def load(name):
    if name == "newcomer":
        X_train, y_train, X_test, y_test, _ = newcomer_set()
        return X_train, y_train, X_test, y_test, False
    data = load_npz(name, f"/work/shared/data/{name}.npz")
    return data.X_train, data.y_train, data.X_test, data.y_test, True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="follow,fixed")
    parser.add_argument("--datasets", default="newcomer")
    parser.add_argument("--quiet", action="store_true", help="no per-point lines")
    args = parser.parse_args()
    for dataset in args.datasets.split(","):
        run(dataset, args.variants.split(","), args.quiet)


def run(dataset, variants, quiet):
    X_train, y_train, X_test, y_test, scale = load(dataset)
    folds = list(
        StratifiedKFold(5, shuffle=True, random_state=0).split(X_train, y_train)
    )
    for name in variants:
        _base.gradient_tol = _uncapped if name == "follow_uncapped" else _capped
        clf = MarginSoftmaxClassifierCV(cv=folds, ms=VARIANTS[name])
        model = make_pipeline(StandardScaler(), clf) if scale else clf
        cpu = time.process_time()
        model.fit(X_train, y_train)
        cpu = time.process_time() - cpu
        _base.gradient_tol = _capped
        proba = model.predict_proba(X_test)
        accuracy = accuracy_score(y_test, model.predict(X_test))
        print(
            f"{dataset} {name}: acc {accuracy:.4f} "
            f"log loss {log_loss(y_test, proba, labels=clf.classes_):.4f} "
            f"s_={clf.s_:.4g} m_={clf.m_:.4g} T={clf.temperature_:.3f} "
            f"cpu {cpu:.1f}s refit n_iter {clf.estimator_.n_iter_}",
            flush=True,
        )
        if quiet:
            continue
        results = clf.cv_results_
        for params, score, n_iter in zip(
            results["params"],
            results["mean_test_score"],
            results["mean_n_iter"],
            strict=True,
        ):
            print(
                f"    s={params['s']:7.4g} m={params['m']:.4g} "
                f"cv {score:.4f} mean n_iter {n_iter:.1f}"
            )
        print(f"    fold n_iter (folds x points):\n{np.asarray(clf.n_iter_)[:, 0]}")


if __name__ == "__main__":
    main()
