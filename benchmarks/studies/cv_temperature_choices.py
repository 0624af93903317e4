"""How far can a temperature take MarginSoftmaxClassifierCV's test ECE?

The question (issue 39): ``MarginSoftmaxClassifierCV()``'s test ECE is above
``LogisticRegressionCV()``'s on a9a, letter, pendigits and usps. Is the
temperature badly estimated, or can no temperature do better?

For each data set: ``MarginSoftmaxClassifierCV()`` on the shuffled 5 folds of
``cv_vs_logregcv.py`` (the benchmark sets standardised, the CLIP sets as unit
rows); the out-of-fold logits its temperature is fitted on are captured, and
the test log loss and ECE (15 equal-width bins) are computed at four
temperatures:

* ``ll``: the search's own, minimising the held-out log loss;
* ``conf``: the one where the held-out mean top-class confidence equals the
  held-out accuracy (a one-bin ECE of zero);
* ``ecemin``: the one minimising the held-out ECE (a grid of 300);
* ``test-ll``: the one minimising the *test* log loss (an oracle: what the
  best log-loss temperature could reach).

One BLAS thread; no timing.

Usage::

    python benchmarks/studies/cv_temperature_choices.py [--data ../shared/data]
        [--datasets letter,usps,...]
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.optimize import brentq  # noqa: E402
from scipy.special import log_softmax, softmax  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import sklmargin.model_selection._cv_base as cv_base  # noqa: E402
from sklmargin import MarginSoftmaxClassifierCV  # noqa: E402
from sklmargin.compare.datasets import load_npz  # noqa: E402
from sklmargin.model_selection._calibration import fit_temperature  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import expected_calibration_error, logits_from_decision  # noqa: E402

SETS = (
    "a9a,dna,letter,pendigits,satimage,segment,usps,vowel,"
    "clip_vitb32_caltech101,clip_vitb32_ucf101_midframes"
)


def test_log_loss(z, y, T):
    return float(-np.mean(log_softmax(z / T, axis=1)[np.arange(len(y)), y]))


def confidence_matching(z, y):
    """T where the mean top-class confidence equals the accuracy (NaN if none)."""
    accuracy = np.mean(z.argmax(axis=1) == y)

    def gap(log_t):
        return softmax(z / np.exp(log_t), axis=1).max(axis=1).mean() - accuracy

    try:
        return float(np.exp(brentq(gap, np.log(1e-2), np.log(1e2))))
    except ValueError:
        return float("nan")


def ece_minimising(z, y):
    grid = np.geomspace(0.05, 20.0, 300)
    eces = [expected_calibration_error(softmax(z / t, axis=1), y) for t in grid]
    return float(grid[int(np.argmin(eces))])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--datasets", default=SETS)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    captured = {}
    fit = cv_base.fit_temperature

    def capturing(logits, y_encoded, sample_weight=None):
        captured["z"], captured["y"] = logits, y_encoded
        return fit(logits, y_encoded, sample_weight)

    cv_base.fit_temperature = capturing
    for name in args.datasets.split(","):
        data = load_npz(name, Path(args.data) / f"{name}.npz")
        folds = list(
            StratifiedKFold(5, shuffle=True, random_state=0).split(
                data.X_train, data.y_train
            )
        )
        steps = [] if name.startswith("clip_") else [StandardScaler()]
        model = make_pipeline(*steps, MarginSoftmaxClassifierCV(cv=folds))
        model.fit(data.X_train, data.y_train)
        classes = model[-1].classes_
        z = logits_from_decision(model.decision_function(data.X_test))
        y = np.searchsorted(classes, data.y_test)
        held_z, held_y = captured["z"], captured["y"]
        choices = (
            ("ll", fit_temperature(held_z, held_y)),
            ("conf", confidence_matching(held_z, held_y)),
            ("ecemin", ece_minimising(held_z, held_y)),
            ("test-ll", fit_temperature(z, y)),
        )
        cells = [
            f"{label} T={T:.3f} ll={test_log_loss(z, y, T):.4f} "
            f"ece={expected_calibration_error(softmax(z / T, axis=1), y):.4f}"
            for label, T in choices
        ]
        print(f"{name} s={model[-1].s_:.3g} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
