"""Would the one-standard-error rule choose a better s for MarginSoftmaxClassifierCV?

The question (issue 28): on UCF101 CLIP features the CV accuracies of the large-s
points nearly tie, and the maximum of the tie wins. The one-standard-error rule
(Hastie, Tibshirani & Friedman, *The Elements of Statistical Learning*, 2nd ed.,
sec. 7.10) picks instead the most regularised point (the smallest s) whose mean
fold score is within one standard error of the best. Two variants: the standard
error of the best point's fold scores (``1se``), and that of the paired
differences to the best point (``paired``).

For each data set: ``MarginSoftmaxClassifierCV()`` on 5 folds (the benchmark
sets: standardised, the shuffled folds of ``cv_vs_logregcv.py``; the CLIP sets:
unit rows, ``cv=5``), the s each rule picks from its ``scores_``, and the test
accuracy of the model the refit gives at that s (the warm-started path walked on
the whole training split up to it). One BLAS thread; accuracy only, no timing.

Usage::

    python benchmarks/studies/cv_one_se_rule.py [--data ../shared/data]
        [--datasets dna,vowel,...]
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import DEFAULT_DATA, command_line, machine  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from sklmargin import MarginSoftmaxClassifier, MarginSoftmaxClassifierCV  # noqa: E402

DATASETS = (
    "a9a,dna,letter,pendigits,satimage,segment,usps,vowel,"
    "clip_vitb32_caltech101,clip_vitb32_ucf101_midframes"
)


def rule_choices(scores):
    """Path indices chosen by the best mean, the 1-SE rule and its paired form."""
    n_folds = scores.shape[0]
    mean = scores.mean(axis=0)
    best = int(np.argmax(mean))
    se = scores[:, best].std(ddof=1) / np.sqrt(n_folds)
    paired = (scores - scores[:, [best]]).std(axis=0, ddof=1) / np.sqrt(n_folds)
    one_se = int(np.flatnonzero(mean >= mean[best] - se)[0])
    one_se_paired = int(np.flatnonzero(mean >= mean[best] - paired)[0])
    return {"best": best, "1se": one_se, "paired": one_se_paired}


def walked_accuracy(X, y, X_test, y_test, path, k):
    """Test accuracy of the warm-started path walked on (X, y) up to path[k]."""
    model = MarginSoftmaxClassifier(warm_start=True)
    for s in path[: k + 1]:
        model.set_params(s=s).fit(X, y)
    return float(np.mean(model.predict(X_test) == y_test))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--datasets", default=DATASETS)
    args = parser.parse_args()
    print(f"command: {command_line()}")
    print(machine())
    warnings.simplefilter("ignore")  # edge warnings: the choices are printed
    gains = {"1se": [], "paired": []}
    with threadpool_limits(1):
        for name in args.datasets.split(","):
            path_file = Path(args.data) / f"{name}.npz"
            if not path_file.exists():
                print(f"{name}: not in {args.data}, skipped")
                continue
            data = np.load(path_file)
            X, y = data["X_train"], data["y_train"]
            X_test, y_test = data["X_test"], data["y_test"]
            if name.startswith("clip"):
                folds = 5
            else:
                scaler = StandardScaler().fit(X)
                X, X_test = scaler.transform(X), scaler.transform(X_test)
                folds = list(
                    StratifiedKFold(5, shuffle=True, random_state=0).split(X, y)
                )
            clf = MarginSoftmaxClassifierCV(cv=folds).fit(X, y)
            path = [p["s"] for p in clf.cv_results_["params"]]
            choices = rule_choices(clf.scores_.reshape(clf.scores_.shape[0], -1))
            accuracy = {
                k: walked_accuracy(X, y, X_test, y_test, path, k)
                for k in set(choices.values())
            }
            best = accuracy[choices["best"]]
            for rule in gains:
                gains[rule].append(accuracy[choices[rule]] - best)
            print(
                f"{name:30s} "
                + "  ".join(
                    f"{rule} s={path[k]:6.1f} acc {accuracy[k]:.4f}"
                    for rule, k in choices.items()
                ),
                flush=True,
            )
    for rule, values in gains.items():
        values = np.array(values)
        print(
            f"{rule}: mean test accuracy change {100 * values.mean():+.2f} points "
            f"against the best mean; lower on {(values < 0).sum()}, higher on "
            f"{(values > 0).sum()} of {len(values)} sets"
        )


if __name__ == "__main__":
    main()
