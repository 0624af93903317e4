"""The linear search's default margin along its s path: constant, or following s.

One question (issue 39, the 384-d newcomer set): does
``MarginSoftmaxClassifierCV()`` get closer to ``LogisticRegressionCV()`` when
its default margin follows the scale as the linear default's does
(``m = m_0`` up to ``s_0``, ``m_0 s_0 / s`` above: the margin in logits
kept), and where do its fold fits and its refit stop? For each variant it
prints the test accuracy and log loss, the chosen ``(s, m)``, CPU seconds,
and per path point the mean held-out score and the folds' mean iterations
(``cv_results_["mean_n_iter"]``), then the refit's iterations.

Variants: ``follow`` (the default ``ms=None``: on code where the margin
follows s), ``fixed`` (``ms=(0.05,)``: a constant margin along the path, the
old default), ``m0`` (``ms=(0.0, 0.05)``).

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

from sklmargin import MarginSoftmaxClassifierCV  # noqa: E402

VARIANTS = {"follow": None, "fixed": (0.05,), "m0": (0.0, 0.05)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="follow,fixed")
    args = parser.parse_args()
    X_train, y_train, X_test, y_test, _ = newcomer_set()
    folds = list(
        StratifiedKFold(5, shuffle=True, random_state=0).split(X_train, y_train)
    )
    for name in args.variants.split(","):
        clf = MarginSoftmaxClassifierCV(cv=folds, ms=VARIANTS[name])
        cpu = time.process_time()
        clf.fit(X_train, y_train)
        cpu = time.process_time() - cpu
        proba = clf.predict_proba(X_test)
        print(
            f"{name}: acc {accuracy_score(y_test, clf.predict(X_test)):.4f} "
            f"log loss {log_loss(y_test, proba, labels=clf.classes_):.4f} "
            f"s_={clf.s_:.4g} m_={clf.m_:.4g} T={clf.temperature_:.3f} "
            f"cpu {cpu:.1f}s refit n_iter {clf.estimator_.n_iter_}",
            flush=True,
        )
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
