"""Issue 25: does the Nyström spectrum say how wide the kernel machine must be?

The plain ``KernelMarginSoftmaxClassifier()`` keeps every eigen-direction of
the centres' kernel matrix above the float32 resolution (about ``1e-6 x`` the
largest eigenvalue) and takes ``n_components="auto"`` centres (a rule on the
number of rows only). Two data-driven alternatives are measured here against
that default, each a subclass that changes the map only:

* ``cutR``: drop the eigen-directions below ``R x`` the largest eigenvalue,
  so the output width follows the spectrum of the data (fewer features where
  the kernel matrix is effectively of low rank);
* ``x2``: twice the default number of centres; ``x2_cutR``: twice the
  centres, then the cut (more centres, the width still chosen by the spectrum).

Every model is ``Pipeline(StandardScaler(), model)`` with
``random_state=0``, one BLAS thread; accuracy on the test split, fit and
predict CPU seconds (``time.process_time``), the output width, and the mean
Nyström residual ``1 - |z(x)|^2`` of up to 2,000 test rows after the learned
metric (``0``: the centres span the row's kernel function; ``1``: they miss
it), the label-free measurement a size rule could read. The data sets are
those of ``benchmarks/kernel_metric.py`` (the shared splits in ``--data``
and ``synthetic``).

Usage::

    python benchmarks/studies/kernel_spectrum_width.py --data ../shared/data \\
        --variants default,cut1e-4,cut1e-3,x2,x2_cut1e-3 > spectrum.jsonl
    python benchmarks/studies/kernel_spectrum_width.py --summary spectrum.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402
    add_data_argument,
    pinned_blas,
    study_cells,
    summarised_or_started,
)
from kernel_targets import DATASETS, split_of  # noqa: E402

from sklmargin import KernelMarginSoftmaxClassifier, NystroemFeatures  # noqa: E402
from sklmargin.estimators._kernel import resolve_n_components  # noqa: E402
from sklmargin.features._input_transform import apply_input_transform  # noqa: E402


class _CutNystroem(NystroemFeatures):
    """The Nyström map without the eigen-directions below ``cut x`` the largest."""

    cut = 0.0

    def _fit_centres(self, centres, dtype):
        super()._fit_centres(centres, dtype)
        keep = self.eigenvalues_ > self.cut * self.eigenvalues_[0]
        self.eigenvalues_ = self.eigenvalues_[keep]
        self.normalization_ = np.ascontiguousarray(self.normalization_[:, keep])
        self.n_components_ = int(np.count_nonzero(keep))
        return self


class _Variant(KernelMarginSoftmaxClassifier):
    """The default estimator with ``factor x`` its centres and an eigenvalue cut."""

    factor = 1
    cut = 0.0

    def _kernel_features(self):
        # the estimator's own pipeline, with factor x its width and the cut
        features = super()._kernel_features()
        new_map = features.new_map

        def width(n_samples):
            return self.factor * resolve_n_components(self.n_components, n_samples)

        def cut_map(width, gamma):
            feature_map = _CutNystroem(**new_map(width, gamma).get_params())
            feature_map.cut = self.cut
            return feature_map

        features.width, features.new_map = width, cut_map
        return features


def variant(name):
    """``_Variant`` of a name: ``default``, ``cutR``, ``x2``, ``x2_cutR``."""
    model = _Variant(random_state=0)
    for part in name.split("_"):
        if part.startswith("cut"):
            model.cut = float(part[3:])
        elif part.startswith("x"):
            model.factor = int(part[1:])
        elif part != "default":
            raise SystemExit(f"unknown variant part {part!r} in {name!r}")
    return model


def residual(pipe, X_test, rows=2000):
    """Mean ``1 - |z(x)|^2`` over up to ``rows`` test rows (after the metric)."""
    model = pipe[-1]
    X = pipe[:-1].transform(X_test)[:rows]
    if model.input_transform_ is not None:
        X = apply_input_transform(X, model.input_transform_)
    Z = model.feature_map_.transform(X.astype(model.compute_dtype_))
    return float(np.mean(1.0 - np.einsum("ij,ij->i", Z, Z, dtype=np.float64)))


def run(name, split, names):
    X_train, y_train, X_test, y_test = split
    for label in names:
        pipe = make_pipeline(StandardScaler(), variant(label))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.process_time()
            pipe.fit(X_train, y_train)
            fit_cpu = time.process_time() - start
            start = time.process_time()
            pred = pipe.predict(X_test)
            predict_cpu = time.process_time() - start
        model = pipe[-1]
        row = {"dataset": name, "variant": label, "n_train": len(y_train)}
        row["centres"] = int(model.feature_map_.components_.shape[0])
        row["width"] = int(model.feature_map_.n_components_)
        row["acc"] = 100 * float(np.mean(pred == y_test))
        row.update(fit_cpu=fit_cpu, predict_cpu=predict_cpu)
        row["residual"] = residual(pipe, X_test)
        print(json.dumps(row), flush=True)


def summary(path):
    """Per set: accuracy, width and CPU of each variant; means over the sets."""
    sets, names, cell = study_cells(path, "variant")
    head = " | ".join(f"{n}: % / width / fit s / predict s" for n in names)
    out = [
        f"| data set | residual | {head} |",
        "|---|---|" + "---|" * len(names),
    ]
    for s in sets:
        cells = []
        for n in names:
            r = cell.get((n, s))
            cells.append(
                "-"
                if r is None
                else f"{r['acc']:.2f} / {r['width']} / {r['fit_cpu']:.2f}"
                f" / {r['predict_cpu']:.3f}"
            )
        base = cell.get((names[0], s))
        res = "-" if base is None else f"{base['residual']:.3f}"
        out.append(f"| {s} | {res} | " + " | ".join(cells) + " |")
    print("\n".join(out))
    for n in names[1:]:
        pairs = [(cell[(n, s)], cell[(names[0], s)]) for s in sets if (n, s) in cell]
        diff = [a["acc"] - b["acc"] for a, b in pairs]
        fit = np.exp(np.mean([np.log(a["fit_cpu"] / b["fit_cpu"]) for a, b in pairs]))
        pred = np.exp(
            np.mean([np.log(a["predict_cpu"] / b["predict_cpu"]) for a, b in pairs])
        )
        print(
            f"{n} - {names[0]}: mean {np.mean(diff):+.2f} points over {len(diff)} "
            f"sets (min {min(diff):+.2f}, max {max(diff):+.2f}); geometric mean "
            f"of the fit CPU ratios {fit:.2f}, of the predict CPU ratios {pred:.2f}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_argument(parser)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--variants", default="default,cut1e-4,cut1e-3,x2,x2_cut1e-3")
    parser.add_argument("--summary", metavar="FILE")
    args = parser.parse_args()
    if summarised_or_started(args, summary):
        return
    with pinned_blas(1, announce=False):
        for name in args.datasets.split(","):
            run(name, split_of(args.data, name), args.variants.split(","))


if __name__ == "__main__":
    main()
