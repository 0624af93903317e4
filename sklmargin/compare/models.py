"""The models of ``compare``: scikit-learn peers, our estimators, their grids.

Our models are built from the loss registry (:func:`sklmargin._margins.
registered_margins`): every registered loss gives a ``margin:<loss>`` and a
``kernel:<loss>`` model, tuned over the loss's own ``search_grid``, so a new
loss shows up here without an edit.

Fairness (DESIGN.md section 8) means every model gets the same number of grid
points, :data:`~sklmargin.compare.settings.GRID_POINTS`. Grid keys are
parameter names of the classifier itself; a :class:`ModelSpec` knows where that
classifier sits in a composite model (e.g. the LogisticRegression after an
RBFSampler).
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.kernel_approximation import Nystroem, RBFSampler
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

from .. import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier
from .._margins import registered_margins
from .settings import (
    GRID_POINTS,
    REFERENCE_MODELS,
    CompareError,
    CompareSettings,
    split_list,
)

#: C values of every peer: 9 points, 0.01 to 100.
C_GRID = [float(c) for c in np.logspace(-2, 2, GRID_POINTS)]

DEFAULT_MODELS = (
    "LinearSVC",
    "LogisticRegression",
    "SVC",
    "RBFSampler+LogisticRegression",
    "margin:am-softmax",
    "margin:arcface",
    "margin:softmax",
    "kernel:am-softmax",
)


@dataclass(frozen=True)
class ModelSpec:
    """One entry of the model registry.

    Parameters
    ----------
    name : str
        Name used by ``--models`` and in the outputs.
    description : str
        One line for ``--models list``.
    build : callable
        ``build(settings) -> estimator``: the model without the scaler.
    grid : mapping
        Tuning grid, keyed by parameter names of the classifier.
    classifier_path : str, default=""
        Where the classifier sits in the result of ``build`` as a
        ``get_params`` prefix (``"clf__"`` inside a feature pipeline).
    superlinear : bool, default=False
        Whether the fit cost grows superlinearly with ``n_train``.
    ours : bool, default=False
        Whether this is one of sklmargin's estimators.
    """

    name: str
    description: str
    build: Callable[[CompareSettings], BaseEstimator]
    grid: Mapping[str, Sequence[Any]]
    classifier_path: str = ""
    superlinear: bool = False
    ours: bool = False

    def param_grid(self) -> dict[str, list]:
        """Return the grid with the full parameter paths of :func:`build_pipeline`."""
        return {
            f"model__{self.classifier_path}{key}": list(values)
            for key, values in self.grid.items()
        }


def grid_size(grid: Mapping[str, Sequence[Any]]) -> int:
    """Return the number of points of a ``GridSearchCV`` grid."""
    return math.prod(len(values) for values in grid.values())


def check_grid_sizes(specs: Iterable[ModelSpec]) -> int:
    """Check that every model has the same number of grid points and return it.

    Raises
    ------
    ValueError
        If the grids differ in size (tuning would not be fair).
    """
    sizes = {spec.name: grid_size(spec.grid) for spec in specs}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"tuning grids differ in size (unfair comparison): {sizes}")
    return next(iter(sizes.values()), 0)


def _logistic_regression(settings: CompareSettings) -> LogisticRegression:
    return LogisticRegression(
        tol=settings.tol, max_iter=settings.max_iter, random_state=settings.random_state
    )


def _build_linear_svc(settings: CompareSettings) -> LinearSVC:
    return LinearSVC(dual="auto", random_state=settings.random_state)


def _build_svc(settings: CompareSettings) -> SVC:
    return SVC(kernel="rbf", gamma="scale", random_state=settings.random_state)


def _build_rbf_sampler_lr(settings: CompareSettings) -> Pipeline:
    features = RBFSampler(
        gamma="scale",
        n_components=settings.n_components,
        random_state=settings.random_state,
    )
    return Pipeline([("features", features), ("clf", _logistic_regression(settings))])


def _build_nystroem_lr(settings: CompareSettings) -> Pipeline:
    # gamma=None is 1/n_features, which equals gamma="scale" after StandardScaler.
    features = Nystroem(
        kernel="rbf",
        gamma=None,
        n_components=settings.n_components,
        random_state=settings.random_state,
    )
    return Pipeline([("features", features), ("clf", _logistic_regression(settings))])


def _build_margin(loss: str, settings: CompareSettings) -> BaseEstimator:
    return MarginSoftmaxClassifier(
        loss=loss,
        tol=settings.tol,
        max_iter=settings.max_iter,
        random_state=settings.random_state,
    )


def _build_kernel(loss: str, settings: CompareSettings) -> BaseEstimator:
    return KernelMarginSoftmaxClassifier(
        loss=loss,
        gamma="scale",
        n_components=settings.n_components,
        tol=settings.tol,
        max_iter=settings.max_iter,
        random_state=settings.random_state,
    )


def _peer_specs() -> list[ModelSpec]:
    return [
        ModelSpec(
            "LinearSVC",
            'LinearSVC(dual="auto"): linear, squared hinge, one-vs-rest',
            _build_linear_svc,
            {"C": C_GRID},
        ),
        ModelSpec(
            "LogisticRegression",
            "LogisticRegression(lbfgs): linear, multinomial",
            _logistic_regression,
            {"C": C_GRID},
        ),
        ModelSpec(
            "SVC",
            'SVC(kernel="rbf", gamma="scale"): exact kernel, superlinear in n_train',
            _build_svc,
            {"C": C_GRID},
            superlinear=True,
        ),
        ModelSpec(
            "RBFSampler+LogisticRegression",
            "random Fourier features (n_components) + LogisticRegression",
            _build_rbf_sampler_lr,
            {"C": C_GRID},
            classifier_path="clf__",
        ),
        ModelSpec(
            "Nystroem+LogisticRegression",
            "Nystroem RBF features (n_components) + LogisticRegression",
            _build_nystroem_lr,
            {"C": C_GRID},
            classifier_path="clf__",
        ),
    ]


def _our_specs() -> list[ModelSpec]:
    margins = registered_margins()
    linear = [
        ModelSpec(
            f"margin:{margin.name}",
            f'MarginSoftmaxClassifier(loss="{margin.name}"): linear',
            functools.partial(_build_margin, margin.name),
            {key: list(values) for key, values in margin.search_grid.items()},
            ours=True,
        )
        for margin in margins
    ]
    kernel = [
        ModelSpec(
            f"kernel:{margin.name}",
            f'KernelMarginSoftmaxClassifier(loss="{margin.name}"): random features '
            "(n_components)",
            functools.partial(_build_kernel, margin.name),
            {key: list(values) for key, values in margin.search_grid.items()},
            ours=True,
        )
        for margin in margins
    ]
    return linear + kernel


def model_registry() -> dict[str, ModelSpec]:
    """Return every model ``compare`` knows, by name.

    Peers are scikit-learn estimators; ours are ``margin:<loss>``
    (``MarginSoftmaxClassifier``) and ``kernel:<loss>``
    (``KernelMarginSoftmaxClassifier``) for every registered loss.

    Returns
    -------
    dict of str to ModelSpec
        The registry, peers first.
    """
    return {spec.name: spec for spec in [*_peer_specs(), *_our_specs()]}


def resolve_models(
    requested: str | None, registry: Mapping[str, ModelSpec]
) -> tuple[list[ModelSpec], list[str]]:
    """Turn a ``--models`` value into registry entries.

    Names are matched case-insensitively and may be glob patterns
    (``margin:*``). The reference models of the time ratios are added when
    missing and always come first.

    Parameters
    ----------
    requested : str or None
        Comma-separated model names; ``None`` for :data:`DEFAULT_MODELS`.
    registry : mapping of str to ModelSpec
        From :func:`model_registry`.

    Returns
    -------
    specs : list of ModelSpec
        The models to run, in order.
    notes : list of str
        What was added, to print.

    Raises
    ------
    CompareError
        If a name is unknown (the message lists the valid names and the closest
        match).
    """
    names = list(DEFAULT_MODELS) if requested is None else split_list(requested)
    if not names:
        raise CompareError("--models: no model names given.")
    resolved: list[str] = []
    for name in names:
        matches = match_model_name(name, registry, "--models")
        resolved += [match for match in matches if match not in resolved]

    notes = []
    added = [name for name in REFERENCE_MODELS if name not in resolved]
    if added:
        notes.append(
            f"added {', '.join(added)}: the time ratios are measured against them "
            "in the same run."
        )
    # References first, in a fixed order: every table then starts the same way.
    resolved = [*REFERENCE_MODELS, *(n for n in resolved if n not in REFERENCE_MODELS)]
    return [registry[name] for name in resolved], notes


def match_model_name(
    name: str, registry: Mapping[str, ModelSpec], option: str
) -> list[str]:
    """Return the registry names ``name`` matches: case-insensitive, globs allowed.

    Raises
    ------
    CompareError
        If nothing matches; the message names ``option``, the closest name and
        every valid one.
    """
    matches = [
        known for known in registry if fnmatch.fnmatchcase(known.lower(), name.lower())
    ]
    if not matches:
        close = difflib.get_close_matches(name, list(registry), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise CompareError(
            f"{option}: unknown model {name!r}.{hint} Available: "
            f"{', '.join(registry)} (see --models list)."
        )
    return matches


def build_pipeline(spec: ModelSpec, settings: CompareSettings) -> Pipeline:
    """Return ``Pipeline([StandardScaler(), model])`` for one registry entry.

    The scaler is part of the pipeline so that it is fitted on the training
    split (or the training folds when tuning) only.
    """
    return Pipeline(
        [("standardscaler", StandardScaler()), ("model", spec.build(settings))]
    )


def format_model_list(registry: Mapping[str, ModelSpec]) -> str:
    """Return the text of ``--models list``: names and descriptions."""
    width = max(map(len, registry))
    lines = ["available models (* = default set):"]
    for name, spec in registry.items():
        mark = "*" if name in DEFAULT_MODELS else " "
        lines.append(f" {mark} {name:<{width}}  {spec.description}")
    return "\n".join(lines)
