"""Where unscaled features start to cost accuracy: the FeatureScaleWarning threshold.

Statistic (``sklmargin._utils.validation.check_feature_scales``): the largest
column root-mean-square (uncentred) over the median of the other columns'.

1. Sweep: standardised data (customer-like columns, and make_classification
   with 20 features), one column multiplied by r; the training accuracy of
   ``MarginSoftmaxClassifier()`` (defaults) against r = 1, for two columns and
   three seeds of each generator (12 cases).
2. Raw customer-like columns (income ~3e4, age ~40, tenure, a count, two 0/1
   flags): accuracy raw and after StandardScaler; which warnings are raised.
3. The statistic of scikit-learn's bundled sets and of the benchmark sets in
   ``--data`` (raw), with the test accuracy raw and after StandardScaler: what
   the warning would say about real data.

Usage::

    python benchmarks/feature_scale.py --data ../shared/data \
        --output benchmarks/results_feature_scale.md
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
from _common import add_data_argument, machine, now, pinned_blas, versions
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklmargin import MarginSoftmaxClassifier
from sklmargin._utils.validation import FEATURE_SCALE_RATIO
from sklmargin.compare.datasets import builtin_datasets, load_npz_dir

RATIOS = (10, 15, 20, 30, 50, 100)


def customers(n=3000, seed=0):
    """Customer-like raw columns and a 3-class label from their standardised values."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            rng.lognormal(np.log(3e4), 0.5, n),  # income
            rng.normal(40, 12, n).clip(18, 90),  # age
            rng.uniform(0, 120, n),  # tenure, months
            rng.integers(1, 6, n).astype(float),  # products held
            (rng.random(n) < 0.7).astype(float),  # has a card
            (rng.random(n) < 0.5).astype(float),  # active
        ]
    )
    logits = StandardScaler().fit_transform(X) @ rng.normal(size=(6, 3))
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    return X, y


def scale_ratio(X):
    """The warning's statistic, unweighted."""
    rms = np.sqrt(np.mean(X * X, axis=0))
    rms = np.sort(rms[rms > 0])
    return rms[-1] / np.median(rms[:-1])


def _accuracy(model, X, y, X_test=None, y_test=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return model.score(X, y) if X_test is None else model.score(X_test, y_test)


def sweep():
    lines = [
        "## 1. Standardised data, one column multiplied by r",
        "",
        "Training accuracy of `MarginSoftmaxClassifier()` at r minus at r = 1, "
        "in points.",
        "",
        "| data | seed | column | " + " | ".join(f"r={r}" for r in RATIOS) + " |",
        "|---|---|---|" + "---|" * len(RATIOS),
    ]
    deltas = []
    for seed in range(3):
        X, y = customers(seed=seed)
        cases = [("customers", X, y, (0, 4))]
        X, y = make_classification(
            3000, 20, n_informative=10, n_classes=4, random_state=seed
        )
        cases.append(("make_classification d=20", X, y, (0, 19)))
        for name, X, y, columns in cases:
            Z = StandardScaler().fit_transform(X)
            base = _accuracy(MarginSoftmaxClassifier(), Z, y)
            for column in columns:
                row = []
                for r in RATIOS:
                    scaled = Z.copy()
                    scaled[:, column] *= r
                    row.append(
                        100 * (_accuracy(MarginSoftmaxClassifier(), scaled, y) - base)
                    )
                deltas.append(row)
                cells = " | ".join(f"{v:+.1f}" for v in row)
                lines.append(f"| {name} | {seed} | {column} | {cells} |")
    deltas = np.array(deltas)
    for label, values in (("median", np.median(deltas, 0)), ("worst", deltas.min(0))):
        cells = " | ".join(f"{v:+.1f}" for v in values)
        lines.append(f"| **{label}** ({len(deltas)} cases) | | | {cells} |")
    return lines


def raw_customers():
    X, y = customers(seed=0)
    lines = [
        "",
        "## 2. Raw customer-like columns (3,000 rows, seed 0)",
        "",
        f"Scale ratio {scale_ratio(X):.3g} (threshold {FEATURE_SCALE_RATIO:g}).",
        "",
        "| model | raw train acc. | warnings raised | with StandardScaler |",
        "|---|---|---|---|",
    ]
    for name, model in (
        ("MarginSoftmaxClassifier()", MarginSoftmaxClassifier()),
        (
            'MarginSoftmaxClassifier(loss="softmax")',
            MarginSoftmaxClassifier(loss="softmax"),
        ),
        ("LogisticRegression()", LogisticRegression()),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            raw = model.fit(X, y).score(X, y)
        kinds = sorted({w.category.__name__ for w in caught}) or ["none"]
        scaled = _accuracy(make_pipeline(StandardScaler(), model), X, y)
        lines.append(f"| {name} | {raw:.3f} | {', '.join(kinds)} | {scaled:.3f} |")
    return lines


def real_sets(data_dir: Path):
    lines = [
        "",
        "## 3. Real data, raw: the statistic and what scaling changes",
        "",
        "Test accuracy of `MarginSoftmaxClassifier()`; bundled sets split 75/25 "
        "(stratified, seed 0); benchmark sets: their own split, at most 4,000 "
        "training and 2,000 test rows. Rows of one length within 1% (unit-norm "
        "embeddings) are exempt from the warning.",
        "",
        "| data | scale ratio | rows of one length | raw | StandardScaler | warned |",
        "|---|---|---|---|---|---|",
    ]
    sets = {}
    builtin = builtin_datasets("iris,wine,breast_cancer,digits", 0.25, random_state=0)
    for data in builtin:
        sets[data.name] = data.X_train, data.y_train, data.X_test, data.y_test
    for data in load_npz_dir(data_dir) if any(Path(data_dir).glob("*.npz")) else ():
        sets[data.name] = (
            data.X_train[:4000].astype(np.float64),
            data.y_train[:4000],
            data.X_test[:2000].astype(np.float64),
            data.y_test[:2000],
        )
    for name, (X_train, y_train, X_test, y_test) in sets.items():
        norms = np.linalg.norm(X_train, axis=1)
        one_length = norms.min() > 0 and norms.max() <= 1.01 * norms.min()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            raw = MarginSoftmaxClassifier().fit(X_train, y_train).score(X_test, y_test)
        warned = any(w.category.__name__ == "FeatureScaleWarning" for w in caught)
        scaled = _accuracy(
            make_pipeline(StandardScaler(), MarginSoftmaxClassifier()),
            X_train, y_train, X_test, y_test,
        )  # fmt: skip
        lines.append(
            f"| {name} | {scale_ratio(X_train):.3g} | {'yes' if one_length else 'no'} "
            f"| {raw:.3f} | {scaled:.3f} | {'yes' if warned else 'no'} |"
        )
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--output", type=Path, help="write the markdown here")
    args = parser.parse_args()
    with pinned_blas(1):
        body = sweep() + raw_customers() + real_sets(args.data)
    header = [
        "# Feature scales: where the FeatureScaleWarning starts",
        "",
        "Made by `python benchmarks/feature_scale.py --data ../shared/data "
        f"--output benchmarks/results_feature_scale.md` on {now()}, {machine()}; "
        f"{versions()}.",
        "",
    ]
    text = "\n".join(header + body) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
