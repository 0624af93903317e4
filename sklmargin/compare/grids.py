"""``--grid MODEL.PARAM=V1,V2,...``: parsed, checked and applied before any fit.

Every point of a changed grid is set on a copy of the classifier and put
through the classifier's own parameter validation (scikit-learn's
``_validate_params``, and for sklmargin's estimators the loss's domain check of
``m`` and ``s``), so a value the model refuses is a one-line error before the
run, not a failed grid search after it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sklearn.base import clone

from .models import RELATIVE_GAMMA, ModelSpec, grid_size, match_model_name
from .rbf import classifier_in
from .settings import CompareError, CompareSettings, split_list


def parse_grid_option(text: str) -> tuple[str, str, list]:
    """Split one ``--grid MODEL.PARAM=V1,V2,...`` value.

    ``MODEL`` is a model name or glob (``margin:*``), ``PARAM`` a parameter of
    its classifier (or ``gamma/scale``); values are integers, floats or words.

    Raises
    ------
    CompareError
        If the value does not have that form.
    """
    target, sep, values_text = text.partition("=")
    model, dot, param = target.strip().partition(".")
    values = [_grid_value(part) for part in split_list(values_text)]
    if not (sep and dot and model and param and values):
        raise CompareError(
            f"--grid: expected MODEL.PARAM=V1,V2,... (e.g. "
            f"'margin:am-softmax.s=30,100,300'), got {text!r}."
        )
    return model, param.strip(), values


def _grid_value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def apply_grid_options(
    specs: Sequence[ModelSpec], options: Sequence[str], settings: CompareSettings
) -> tuple[list[ModelSpec], list[str]]:
    """Replace (or add) grid values of the selected models, ``--grid`` by ``--grid``.

    Parameters
    ----------
    specs : sequence of ModelSpec
        The models of the run.
    options : sequence of str
        ``MODEL.PARAM=V1,V2,...`` values (see :func:`parse_grid_option`).
    settings : CompareSettings
        To build each classifier once and check that it has ``PARAM``.

    Returns
    -------
    specs : list of ModelSpec
        The models with their new grids.
    notes : list of str
        One note per changed grid.

    Raises
    ------
    CompareError
        If a model is not in the run, has no such parameter or refuses one of
        the values (see :func:`check_grid`).
    """
    specs = list(specs)
    by_name = {spec.name: spec for spec in specs}
    notes = []
    for option in options:
        pattern, param, values = parse_grid_option(option)
        for name in match_model_name(pattern, by_name, "--grid"):
            spec = by_name[name]
            estimator = spec.build(settings)
            prefix = spec.classifier_path
            known = {
                key[len(prefix) :]
                for key in estimator.get_params(deep=True)
                if key.startswith(prefix) and "__" not in key[len(prefix) :]
            }
            if "gamma" in known:
                known.add(RELATIVE_GAMMA)
            if param not in known:
                raise CompareError(
                    f"--grid: {name} has no parameter {param!r}; its grid: "
                    f"{', '.join(spec.grid)}; others: {', '.join(sorted(known))}."
                )
            grid = dict(spec.grid)
            if param == RELATIVE_GAMMA:
                grid.pop("gamma", None)
            elif param == "gamma":
                grid.pop(RELATIVE_GAMMA, None)
            grid[param] = values
            by_name[name] = replace(spec, grid=grid)
            notes.append(
                f"--grid: {name} {param} in {values} ({grid_size(grid)} grid points)"
            )
    for spec in specs:
        if by_name[spec.name] is not spec:  # its grid changed: check every point
            check_grid(by_name[spec.name], settings)
    return [by_name[spec.name] for spec in specs], notes


def check_grid(spec: ModelSpec, settings: CompareSettings) -> None:
    """Refuse a grid with a point the classifier would refuse at fit time.

    Every point of the grid is set on a clone of the classifier, which then
    runs scikit-learn's parameter validation (``_validate_params``) and, for
    sklmargin's estimators, the loss's own check of ``m``, ``s`` and
    ``lambda_min`` (``_validate_hyperparameters``): no data, no fit. A
    ``gamma/scale`` multiple is checked as a ``gamma`` of the same sign.

    Raises
    ------
    CompareError
        Naming the model, the first refused point and the classifier's reason.
    """
    classifier = classifier_in(spec.build(settings), spec.classifier_path)
    keys = list(spec.grid)
    names = ["gamma" if key == RELATIVE_GAMMA else key for key in keys]
    for values in itertools.product(*(spec.grid[key] for key in keys)):
        candidate = clone(classifier)
        try:
            candidate.set_params(**dict(zip(names, values, strict=True)))
            for check in ("_validate_params", "_validate_hyperparameters"):
                if callable(getattr(candidate, check, None)):
                    getattr(candidate, check)()
        except (ValueError, TypeError) as exc:
            point = ", ".join(
                f"{key}={value!r}" for key, value in zip(keys, values, strict=True)
            )
            reason = " ".join(str(exc).split())  # one line, whatever the source
            raise CompareError(
                f"--grid: {spec.name} refuses {point}: {reason}"
            ) from exc
