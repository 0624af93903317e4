"""``compare`` measures the library's default kernel model; its peers as wide.

``kernel:*`` is KernelMarginSoftmaxClassifier at its own defaults
(``gamma="auto"``, ``n_components="auto"``), RBFSampler/Nystroem take the width
it resolves on the training split, and a tuned ``gamma/scale`` multiplies the
"scale" its ``gamma="auto"`` doubles.
"""

import argparse
import json

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklmargin import KernelMarginSoftmaxClassifier
from sklmargin.__main__ import main
from sklmargin.compare import CompareSettings, build_pipeline, model_registry, rbf, tune
from sklmargin.compare.cli import register
from sklmargin.compare.protocol import edge_notes
from sklmargin.estimators._kernel import auto_n_components
from sklmargin.features._gamma import scale_gamma

PEERS_WITH_WIDTH = ("RBFSampler+LogisticRegression", "Nystroem+LogisticRegression")


def _parser():
    return register(argparse.ArgumentParser().add_subparsers())


def _data(n_samples=300, n_features=8, seed=0):
    return make_classification(
        n_samples=n_samples,
        n_features=n_features,
        n_informative=4,
        n_classes=3,
        random_state=seed,
    )


def test_kernel_models_are_the_estimator_at_its_defaults():
    default = KernelMarginSoftmaxClassifier()
    assert _parser().parse_args([]).n_components == default.n_components == "auto"
    assert CompareSettings().n_components == "auto"
    for name in ("kernel:am-softmax", "kernel:softmax"):
        spec = model_registry()[name]
        model = build_pipeline(spec, CompareSettings()).named_steps["model"]
        # only the loss and compare's shared seed differ from a bare estimator
        # (tol and max_iter are compare's defaults and the estimator's alike)
        ours = model.get_params()
        theirs = default.get_params()
        assert ours["loss"] == name.split(":")[1] and ours["random_state"] == 0
        for params in (ours, theirs):
            del params["loss"], params["random_state"]
        assert ours == theirs


@pytest.mark.parametrize(
    "text, value", [("auto", "auto"), ("AUTO", "auto"), ("1200", 1200)]
)
def test_n_components_takes_an_integer_or_auto(text, value):
    assert _parser().parse_args(["--n-components", text]).n_components == value


@pytest.mark.parametrize("text", ["0", "-3", "wide", "1.5"])
def test_a_bad_n_components_is_a_usage_error(text, capsys):
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(["--n-components", text])
    assert exc.value.code == 2
    assert "must be an integer >= 1 or 'auto'" in capsys.readouterr().err


def test_help_states_the_auto_widths_from_the_estimators_rule(capsys):
    low, high = rbf.auto_width_range()
    assert (low, high) == (auto_n_components(1), auto_n_components(10**12))
    assert low < high
    try:
        main(["compare", "--help"])
    except SystemExit:  # argparse's way out, caught by main or not
        pass
    text = " ".join(capsys.readouterr().out.split())
    assert f"{low} to {high} centres" in text
    factor = f"default gamma='auto' is {rbf.AUTO_GAMMA_FACTOR:g}"
    assert factor in text


@pytest.mark.parametrize("n_train", [300, 12_000, 40_000])
def test_feature_map_peers_are_as_wide_as_ours_on_the_training_split(n_train):
    registry = model_registry()
    width = auto_n_components(n_train)
    for name in PEERS_WITH_WIDTH:
        pipeline = build_pipeline(registry[name], CompareSettings(), n_train)
        features = pipeline.named_steps["model"].named_steps["features"]
        assert features.n_components == width
        fixed = build_pipeline(registry[name], CompareSettings(n_components=30), 9)
        assert fixed.named_steps["model"].named_steps["features"].n_components == 30
    if n_train == 300:  # ours resolves the same width on those rows
        X, y = _data(n_train)
        spec = registry["kernel:am-softmax"]
        model = build_pipeline(spec, CompareSettings(max_iter=20), n_train)
        with pytest.warns(Warning):  # max_iter=20: a ConvergenceWarning
            model.fit(X, y)
        assert model.named_steps["model"].n_components_ == width
    with pytest.raises(ValueError, match="needs n_train"):
        build_pipeline(registry[PEERS_WITH_WIDTH[0]], CompareSettings())


def test_the_run_time_probe_fits_at_the_runs_width(monkeypatch):
    """The probe fits few rows, but at the width of the run's training split.

    ``"auto"`` resolved on the probe's rows was the law's narrowest width:
    the estimate was low on a split large enough for a wider one.
    """
    from sklmargin.compare import estimate
    from sklmargin.compare.datasets import Dataset

    n_train = 20_000
    width = auto_n_components(n_train)
    assert width > auto_n_components(estimate.PROBE_ROWS)
    X, y = _data(n_train, n_features=6)
    dataset = Dataset("large", X, y, X[:30], y[:30])
    registry = model_registry()
    names = (*PEERS_WITH_WIDTH, "kernel:am-softmax", "LogisticRegression")
    built = {}

    def recording(spec, settings, n_train=None):
        pipeline = build_pipeline(spec, settings, n_train)
        params = pipeline.named_steps["model"].get_params()
        built[spec.name] = params.get(
            "n_components", params.get("features__n_components")
        )
        return pipeline

    monkeypatch.setattr(estimate, "build_pipeline", recording)
    settings = CompareSettings(max_iter=20)
    estimates, _ = estimate.probe_estimates(
        [dataset], [registry[name] for name in names], settings
    )
    assert built == {**dict.fromkeys(names[:3], width), names[3]: None}
    assert all(seconds is not None and seconds > 0 for seconds in estimates)


def test_gamma_base_is_the_scale_the_default_fit_doubles():
    X, y = _data()
    settings = CompareSettings(n_components=30)
    spec = model_registry()["kernel:am-softmax"]
    pipeline = build_pipeline(spec, settings)
    base = rbf.relative_gamma_base(pipeline, spec.classifier_path, X, y)
    fitted = clone(pipeline).fit(X, y).named_steps["model"]
    # the estimator's gamma="auto" on the same rows: AUTO_GAMMA_FACTOR x base
    assert fitted.feature_map_.gamma == pytest.approx(
        rbf.AUTO_GAMMA_FACTOR * base, rel=1e-9
    )
    # ... which is not the standardised rows' scale: the metric reweights them
    standardised = scale_gamma(StandardScaler().fit_transform(X))
    assert standardised == pytest.approx(1 / X.shape[1])
    assert abs(base / standardised - 1) > 0.05
    svc = model_registry()["SVC"]
    svc_base = rbf.relative_gamma_base(build_pipeline(svc, settings), "", X, y)
    assert svc_base == pytest.approx(standardised)


def test_gamma_base_sees_the_imputed_rows():
    X, y = _data()
    X[::7, 2] = np.nan
    settings = CompareSettings(impute="median")
    svc = model_registry()["SVC"]
    base = rbf.relative_gamma_base(build_pipeline(svc, settings), "", X, y)
    imputed = make_pipeline(
        SimpleImputer(strategy="median", add_indicator=True), StandardScaler()
    ).fit_transform(X)
    assert imputed.shape[1] == X.shape[1] + 1  # the indicator column
    assert np.isfinite(base)
    assert base == pytest.approx(scale_gamma(imputed))


def test_a_tuned_gamma_overrides_auto_and_reads_as_its_multiple():
    X, y = _data(150)
    settings = CompareSettings(n_components=20, tune=True)
    spec = model_registry()["kernel:am-softmax"]
    pipeline = build_pipeline(spec, settings, len(y))
    result = tune(pipeline, spec, X, y, settings)
    gamma = result.best_params["model__gamma"]
    multiple = result.reported_params["gamma/scale"]
    assert multiple in rbf.KERNEL_GAMMA_MULTIPLIERS
    # the base tune() multiplied: the same rows, pilot fits and seed again
    base = rbf.relative_gamma_base(pipeline, spec.classifier_path, X, y)
    assert gamma == pytest.approx(multiple * base, rel=1e-9)
    pipeline.set_params(**result.best_params)
    model = pipeline.fit(X, y).named_steps["model"]
    assert model.gamma == gamma and model.feature_map_.gamma == pytest.approx(gamma)


def test_edge_hints_of_the_kernel_grid_step_past_its_multiples():
    spec = model_registry()["kernel:am-softmax"]
    low, middle, high = rbf.KERNEL_GAMMA_MULTIPLIERS
    assert edge_notes({"gamma/scale": middle, "s": 100.0}, spec.grid) == []
    (note,) = edge_notes({"gamma/scale": high, "s": 100.0}, spec.grid, spec.name)
    shifted = ",".join(f"{v:g}" for v in (middle, high, high * high / middle))
    assert f"--grid 'kernel:am-softmax.gamma/scale={shifted}'" in note


def test_tables_state_the_width_and_the_gamma_bases(tmp_path, capsys):
    X, y = _data(90, n_features=6)
    np.savez(tmp_path / "tiny.npz", X_train=X[:60], y_train=y[:60], X_test=X[60:],
             y_test=y[60:])  # fmt: skip
    output = tmp_path / "out.json"
    models = "LinearSVC,LogisticRegression,kernel:am-softmax"
    args = ["compare", "--data", str(tmp_path), "--models", models, "-q",
            "--threads", "1", "--output", str(output)]  # fmt: skip
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    width = auto_n_components(60)
    assert f"n_classes=3, n_components={width}" in out
    assert "n_components='auto' (KernelMarginSoftmaxClassifier's width" in out
    assert "kernel:* KernelMarginSoftmaxClassifier's defaults (gamma='auto'" in out
    metadata = json.loads(output.read_text())["metadata"]
    assert metadata["n_components"] == {"tiny": width}
    assert metadata["settings"]["n_components"] == "auto"

    args = [*args[:-2], "--n-components", "20", "--tune"]
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "n_components=20 (--n-components)" in out
    assert "kernel:* those rows after its learned metric" in out
    assert "n_classes=3, n_components=20" in out
