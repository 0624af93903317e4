r"""The models of ``compare``: scikit-learn peers, our estimators, their grids.

Our models are built from the loss registry (:func:`sklmargin.losses.
registered_margins`): every registered loss gives a ``margin:<loss>`` model,
tuned over the loss's own ``search_grid``, and a ``kernel:<loss>`` model, tuned
over the kernel width and the loss's logit scale (:func:`kernel_grid`), so a
new loss shows up here without an edit.

``kernel:<loss>`` is :class:`~sklmargin.KernelMarginSoftmaxClassifier` at
its own defaults (``gamma="auto"``, ``n_components="auto"`` unless
``--n-components`` says otherwise); the feature-map peers take the width it
resolves on the training split (:mod:`~sklmargin.compare.rbf`). RBF kernel
widths are tuned as multiples of the ``"scale"`` value
:math:`\gamma_0 = 1 / (d \cdot \mathrm{Var}(X))` of the rows the kernel sees
(the grid key ``"gamma/scale"``, resolved by :meth:`ModelSpec.param_grid`):
the same steps for SVC and for our kernel models, each centred on the model's
default (see :mod:`~sklmargin.compare.rbf` for the two bases).

Fairness means every model gets the same number of grid
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
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.impute import SimpleImputer
from sklearn.kernel_approximation import Nystroem, RBFSampler
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

from .. import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier
from ..estimators._kernel import resolve_n_components
from ..losses._registry import registered_margins
from .rbf import (
    AUTO,
    GAMMA_MULTIPLIERS,
    KERNEL_GAMMA_MULTIPLIERS,
    RELATIVE_GAMMA,
)
from .settings import (
    GRID_POINTS,
    REFERENCE_MODELS,
    CompareError,
    CompareSettings,
    split_list,
)

#: C values of the linear peers and the feature-map peers: 9 points, 0.01 to 100.
C_GRID = [float(c) for c in np.logspace(-2, 2, GRID_POINTS)]

#: C values of SVC, crossed with :data:`GAMMA_MULTIPLIERS` (3 x 3 = 9 points).
SVC_C_GRID = [1.0, 10.0, 100.0]

#: Logit scale s of the ``kernel:*`` models, crossed with their gamma multiples
#: (:data:`~sklmargin.compare.rbf.KERNEL_GAMMA_MULTIPLIERS`). Kernel features
#: have ``|z(x)| ~ 1`` and want a larger s than raw features; these values
#: are a first choice, to be revised by a separate study
#: (``benchmarks/studies/tune_kernel_defaults.py``).
KERNEL_S_GRID = [30.0, 100.0, 300.0]

#: HistGradientBoostingClassifier: learning_rate x max_leaf_nodes, defaults
#: (0.1, 31) in the middle.
HGB_GRID = {"learning_rate": [0.03, 0.1, 0.3], "max_leaf_nodes": [15, 31, 63]}

DEFAULT_MODELS = (
    "LinearSVC",
    "LogisticRegression",
    "SVC",
    "HistGradientBoosting",
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
    uses_width : bool, default=False
        Whether the model's width follows ``settings.n_components`` (the
        feature maps, ``kernel:*``): the tables then state it.
    """

    name: str
    description: str
    build: Callable[[CompareSettings], BaseEstimator]
    grid: Mapping[str, Sequence[Any]]
    classifier_path: str = ""
    superlinear: bool = False
    ours: bool = False
    uses_width: bool = False

    @property
    def fixed_width(self) -> bool:
        """Whether ``build`` needs an integer ``settings.n_components``.

        A scikit-learn feature map takes no "auto" (ours resolve it per fit):
        :func:`build_pipeline` resolves it for them.
        """
        return self.uses_width and not self.ours

    def param_grid(self, gamma_base: float | None = None) -> dict[str, list]:
        """Return the grid with the full parameter paths of :func:`build_pipeline`.

        Parameters
        ----------
        gamma_base : float, default=None
            The "scale" value that ``"gamma/scale"`` multiples multiply
            (:func:`~sklmargin.compare.rbf.relative_gamma_base`); needed when
            the grid has that key.
        """
        grid = {}
        for key, values in self.grid.items():
            if key == RELATIVE_GAMMA:
                if gamma_base is None:
                    raise ValueError(f"{self.name}: gamma/scale needs its base")
                grid[self.path("gamma")] = [factor * gamma_base for factor in values]
            else:
                grid[self.path(key)] = list(values)
        return grid

    def path(self, key: str) -> str:
        """Full ``set_params`` name of the classifier's parameter ``key``."""
        return f"model__{self.classifier_path}{key}"

    def reported_params(
        self, best: Mapping[str, Any], gamma_base: float | None = None
    ) -> dict[str, Any]:
        """Return the best parameters of a search in the keys of :attr:`grid`.

        ``gamma`` becomes its ``gamma/scale`` multiple of ``gamma_base`` again,
        so that it can be compared with the grid (edge notes) and given back
        to ``--grid``.
        """
        reported = {}
        for key, values in self.grid.items():
            if key == RELATIVE_GAMMA:
                value = best[self.path("gamma")] / gamma_base
                reported[key] = min(values, key=lambda factor: abs(factor - value))
            else:
                reported[key] = best[self.path(key)]
        return reported


def grid_size(grid: Mapping[str, Sequence[Any]]) -> int:
    """Return the number of points of a ``GridSearchCV`` grid."""
    return math.prod(len(values) for values in grid.values())


def grid_sizes(specs: Iterable[ModelSpec]) -> dict[str, int]:
    """Return the number of grid points of every model, by name."""
    return {spec.name: grid_size(spec.grid) for spec in specs}


def grid_size_note(specs: Iterable[ModelSpec]) -> str | None:
    """Say which models have more or fewer grid points than the others.

    Returns
    -------
    str or None
        ``None`` when every grid has the same size (a fair comparison);
        otherwise a note naming the models off the most common size.
    """
    sizes = grid_sizes(specs)
    if len(set(sizes.values())) <= 1:
        return None
    common = max(set(sizes.values()), key=list(sizes.values()).count)
    others = ", ".join(f"{name} {n}" for name, n in sizes.items() if n != common)
    return (
        f"grids differ in size (not a fair comparison: more points, more "
        f"chances): {common} points for most models, {others}"
    )


def _logistic_regression(settings: CompareSettings) -> LogisticRegression:
    return LogisticRegression(
        tol=settings.tol, max_iter=settings.max_iter, random_state=settings.random_state
    )


def _build_linear_svc(settings: CompareSettings) -> LinearSVC:
    return LinearSVC(
        dual="auto",
        max_iter=settings.linear_svc_max_iter,
        random_state=settings.random_state,
    )


def _build_svc(settings: CompareSettings) -> SVC:
    return SVC(kernel="rbf", gamma="scale", random_state=settings.random_state)


def _build_hgb(settings: CompareSettings) -> HistGradientBoostingClassifier:
    return HistGradientBoostingClassifier(random_state=settings.random_state)


# The feature-map peers are built with an integer n_components: build_pipeline
# resolves --n-components "auto" on the training split (ModelSpec.fixed_width).
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
    # gamma is left at the estimator's default ("auto"): the model compared is
    # the one a user gets; n_components "auto" (the default) is resolved by
    # the estimator on the rows of each fit.
    return KernelMarginSoftmaxClassifier(
        loss=loss,
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
            {"C": SVC_C_GRID, RELATIVE_GAMMA: GAMMA_MULTIPLIERS},
            superlinear=True,
        ),
        ModelSpec(
            "HistGradientBoosting",
            "HistGradientBoostingClassifier: gradient-boosted trees",
            _build_hgb,
            HGB_GRID,
        ),
        ModelSpec(
            "RBFSampler+LogisticRegression",
            "random Fourier features (--n-components) + LogisticRegression",
            _build_rbf_sampler_lr,
            {"C": C_GRID},
            classifier_path="clf__",
            uses_width=True,
        ),
        ModelSpec(
            "Nystroem+LogisticRegression",
            "Nystroem RBF features (--n-components) + LogisticRegression",
            _build_nystroem_lr,
            {"C": C_GRID},
            classifier_path="clf__",
            uses_width=True,
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
            # at its defaults: Nystroem, learned metric, gamma="auto"
            f'KernelMarginSoftmaxClassifier(loss="{margin.name}"): its defaults',
            functools.partial(_build_kernel, margin.name),
            kernel_grid(margin.search_grid),
            ours=True,
            uses_width=True,
        )
        for margin in margins
    ]
    return linear + kernel


def kernel_grid(search_grid: Mapping[str, Sequence[float]]) -> dict[str, list]:
    """Return the 3 x 3 grid of a ``kernel:<loss>`` model from its loss's grid.

    The RBF width (:data:`~sklmargin.compare.rbf.KERNEL_GAMMA_MULTIPLIERS`:
    SVC's steps, centred on the estimator's ``gamma="auto"``, as multiples of
    "scale" after the learned metric) times the loss's logit
    scale: ``s`` in :data:`KERNEL_S_GRID` when the loss has an ``s``, else three
    values (smallest, middle, largest) of its first other knob, ``C`` first
    (softmax, L-Softmax). Margins stay at the loss's defaults: the width and
    the scale are what the features change.
    """
    if "s" in search_grid:
        return {
            RELATIVE_GAMMA: list(KERNEL_GAMMA_MULTIPLIERS),
            "s": list(KERNEL_S_GRID),
        }
    key = "C" if "C" in search_grid else next(iter(search_grid))
    values = sorted(set(search_grid[key]))
    picked = [values[0], values[len(values) // 2], values[-1]]
    return {RELATIVE_GAMMA: list(KERNEL_GAMMA_MULTIPLIERS), key: picked}


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
    requested: str | None,
    registry: Mapping[str, ModelSpec],
    skip: str | None = None,
) -> tuple[list[ModelSpec], list[str]]:
    """Turn a ``--models`` value (and a ``--skip`` value) into registry entries.

    Names are matched case-insensitively and may be glob patterns
    (``margin:*``). The reference models of the time ratios are added when
    missing and always come first, unless ``skip`` names them: the ratios
    against a skipped reference are then left out.

    Parameters
    ----------
    requested : str or None
        Comma-separated model names; ``None`` for :data:`DEFAULT_MODELS`.
    registry : mapping of str to ModelSpec
        From :func:`model_registry`.
    skip : str, default=None
        Comma-separated names or globs to leave out (``--skip``), e.g. a model
        too slow on the data at hand.

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

    skipped: list[str] = []
    for name in split_list(skip or ""):
        skipped += [
            m for m in match_model_name(name, registry, "--skip") if m not in skipped
        ]
    references = [name for name in REFERENCE_MODELS if name not in skipped]
    notes = []
    added = [name for name in references if name not in resolved]
    if added:
        notes.append(
            f"added {', '.join(added)}: the time ratios are measured against "
            f"{'them' if len(added) > 1 else 'it'} in the same run."
        )
    left_out = [
        name for name in skipped if name in resolved or name in REFERENCE_MODELS
    ]
    if left_out:
        no_ratio = [name for name in REFERENCE_MODELS if name in skipped]
        ratios = f"; no time ratios against {', '.join(no_ratio)}" if no_ratio else ""
        notes.append(f"--skip: left out {', '.join(left_out)}{ratios}.")
    # References first, in a fixed order: every table then starts the same way.
    resolved = [
        *references,
        *(n for n in resolved if n not in REFERENCE_MODELS and n not in skipped),
    ]
    if not resolved:
        raise CompareError("--skip leaves no model to run.")
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


def build_pipeline(
    spec: ModelSpec, settings: CompareSettings, n_train: int | None = None
) -> Pipeline:
    """Return ``Pipeline([StandardScaler(), model])`` for one registry entry.

    A model with a fixed feature width (RBFSampler, Nystroem) built with
    ``n_components="auto"`` gets the width the kernel estimator's "auto"
    gives ``n_train`` rows (:func:`~sklmargin.estimators._kernel.resolve_n_components`),
    the rows of the training split it will be fitted on.

    The scaler is part of the pipeline so that it is fitted on the training
    split (or the training folds when tuning) only. With ``settings.impute``
    a ``SimpleImputer(strategy=impute, add_indicator=True)`` comes first, for
    every model alike (HistGradientBoosting, which could take NaN itself,
    included): one 0/1 column per feature with missing values keeps the
    information that a value was missing.
    """
    if spec.fixed_width and settings.n_components == AUTO:
        if n_train is None:
            raise ValueError(f"{spec.name}: n_components='auto' needs n_train")
        width = resolve_n_components(settings.n_components, n_train)
        settings = replace(settings, n_components=width)
    steps = [("standardscaler", StandardScaler()), ("model", spec.build(settings))]
    if settings.impute is not None:
        imputer = SimpleImputer(strategy=settings.impute, add_indicator=True)
        steps.insert(0, ("impute", imputer))
    return Pipeline(steps)


def format_model_list(registry: Mapping[str, ModelSpec]) -> str:
    """Return the text of ``--models list``: names, descriptions, tuning grids."""
    width = max(map(len, registry))
    lines = ["available models (* = default set; grid = what --tune searches):"]
    for name, spec in registry.items():
        mark = "*" if name in DEFAULT_MODELS else " "
        grid = " x ".join(
            f"{key} {{{', '.join(f'{v:.3g}' for v in values)}}}"
            for key, values in spec.grid.items()
        )
        lines.append(f" {mark} {name:<{width}}  {spec.description}")
        lines.append(f"   {'':<{width}}    grid: {grid}")
    return "\n".join(lines)
