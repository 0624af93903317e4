"""Write the newcomer's kind of CSV: mixed scales, missing values, a text column.

6,000 rows: 12 numeric columns on very different scales (1e-3 to 1e5), two of
them with 5 % missing values, one text column (a category unrelated to the
target), and a 4-class string target that depends nonlinearly on 4 columns
(the other 8 numeric columns are noise). It is the data on which the
numeric-gamma bug was found: ``compare --tune`` ranked the kernel model below
its own untuned default there.

Examples
--------
``python benchmarks/newcomer_csv.py /tmp/newcomer.csv`` then
``python -m sklmargin compare --csv /tmp/newcomer.csv --target label --one-hot
--impute median --tune --models 'kernel:am-softmax,HistGradientBoosting'``.
"""

from __future__ import annotations

import argparse
import csv

import numpy as np

SCALES = np.array([1e-3, 1e-2, 0.1, 1, 10, 100, 1e3, 1e4, 1e5, 3, 0.3, 30])
LABELS = np.array(["bronze", "silver", "gold", "platinum"])
TEXT = np.array(["north", "south", "east", "west", "centre"])


def make_rows(n_samples=6000, seed=0):
    """Return ``(header, rows)`` of the CSV (strings and floats, NaN for missing)."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n_samples, len(SCALES)))
    # The target: a nonlinear function of columns 0, 4, 8 and 10 (scales 1e-3,
    # 10, 1e5 and 0.3), cut into four classes at its quartiles.
    score = np.sin(2.0 * Z[:, 0]) + Z[:, 4] * Z[:, 8] + np.abs(Z[:, 10])
    score -= 0.5 * Z[:, 4] ** 2
    score += 0.3 * rng.standard_normal(n_samples)
    y = np.searchsorted(np.quantile(score, [0.25, 0.5, 0.75]), score)
    X = Z * SCALES + 5 * SCALES  # offsets too: not centred
    for column in (3, 8):  # 5 % missing in two columns (one of them informative)
        X[rng.random(n_samples) < 0.05, column] = np.nan
    text = TEXT[rng.integers(len(TEXT), size=n_samples)]
    header = [f"x{j}" for j in range(len(SCALES))] + ["region", "label"]
    rows = [[*row, t, LABELS[k]] for row, t, k in zip(X.tolist(), text, y, strict=True)]
    return header, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="the CSV file to write")
    parser.add_argument("--rows", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    header, rows = make_rows(args.rows, args.seed)
    with open(args.path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in rows:
            writer.writerow(["" if isinstance(v, float) and v != v else v for v in row])


if __name__ == "__main__":
    main()
