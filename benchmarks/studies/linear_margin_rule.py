"""How the linear default's margin and stop test should follow its resolved scale.

On ``make_embeddings`` (benchmarks/linear_scale.py) at the ``--sizes`` given,
fits ``MarginSoftmaxClassifier()`` (which resolves ``s_`` from the rows),
then refits at ``s=s_`` under each margin rule (``fixed``: m = 0.05 at every
scale, the old default; ``logit``: ``m = 0.05 * 30 / s_``, so that ``s m``
stays 1.5 logits, the new default; ``zero``: m = 0) and each stop test
(``capped``: gradient tolerance ``tol * 30`` above ``s = 30`` where
``s m <= 1.5``, the new rule (so ``fixed``, whose ``s m`` is larger, keeps
``tol * s``); ``old``: ``tol * s`` always), and prints training and test
accuracy, test log loss and fit CPU (the refit alone: the pilots are the
default's). Training accuracy is read on the first ``--train-rows`` training rows.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/studies/linear_margin_rule.py --sizes 50000,200000 \\
        --rules fixed,logit,zero --tols capped,old
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from linear_scale import make_embeddings  # noqa: E402

from sklmargin import MarginSoftmaxClassifier  # noqa: E402
from sklmargin.estimators import _base, _scale  # noqa: E402

CAPPED = _scale.gradient_tol


def _old_tol(estimator, margin, m, s):
    return estimator.tol * (1.0 if s is None else s)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="50000")
    parser.add_argument("--rules", default="fixed,logit,zero")
    parser.add_argument("--tols", default="capped,old")
    parser.add_argument("--train-rows", type=int, default=20_000)
    args = parser.parse_args()
    print("| n | margin rule | stop test | s_ | m | n_iter_ | train acc % "
          "| test acc % | log loss | refit CPU s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for n in map(int, args.sizes.split(",")):
        X, y, X_test, y_test = make_embeddings(n)
        _base.gradient_tol = CAPPED
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            s = MarginSoftmaxClassifier().fit(X, y).s_
        margins = {"fixed": 0.05, "logit": 0.05 * 30 / s, "zero": 0.0}
        for stop in args.tols.split(","):
            _base.gradient_tol = CAPPED if stop == "capped" else _old_tol
            for rule in args.rules.split(","):
                clf = MarginSoftmaxClassifier(s=s, m=margins[rule])
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    cpu = time.process_time()
                    clf.fit(X, y)
                    cpu = time.process_time() - cpu
                k = args.train_rows
                train = 100 * np.mean(clf.predict(X[:k]) == y[:k])
                proba = clf.predict_proba(X_test)
                acc = 100 * np.mean(clf.classes_[proba.argmax(1)] == y_test)
                ll = log_loss(y_test, proba, labels=clf.classes_)
                print(f"| {n:,} | {rule} | {stop} | {s:.1f} | {clf.m_:.4f} "
                      f"| {clf.n_iter_} | {train:.2f} | {acc:.2f} | {ll:.4f} "
                      f"| {cpu:.1f} |", flush=True)  # fmt: skip
    _base.gradient_tol = CAPPED


if __name__ == "__main__":
    main()
