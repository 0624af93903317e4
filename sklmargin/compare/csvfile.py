"""CSV input of ``compare``: a header row, numeric features and a label column."""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from .datasets import Dataset, split_train_test
from .settings import CompareError


def load_csv(
    path: str | os.PathLike,
    target: str,
    test_size: float = 0.25,
    random_state: int = 0,
) -> Dataset:
    """Load a CSV file (header row, numeric features) and split it.

    pandas is used when it is installed; otherwise the ``csv`` module.

    Parameters
    ----------
    path : path-like
        The CSV file; its stem names the dataset.
    target : str
        Name of the label column (labels may be strings).
    test_size : float, default=0.25
        Fraction of samples in the stratified test split.
    random_state : int, default=0
        Seed of the split.

    Returns
    -------
    Dataset
        The split.

    Raises
    ------
    CompareError
        If the file or the target column is missing, a feature column is not
        numeric or has missing values (the message names the column), or the
        split is impossible.
    """
    path = Path(path)
    if not path.is_file():
        raise CompareError(f"--csv: file not found: {str(path)!r}.")
    try:
        columns = _read_csv_columns(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise CompareError(f"cannot read {str(path)!r}: {exc}") from exc
    if target not in columns:
        raise CompareError(
            f"--target: no column {target!r} in {str(path)!r}; columns: "
            f"{', '.join(map(repr, columns))}."
        )
    y = columns.pop(target)
    if not columns:
        raise CompareError(f"{str(path)!r} has no feature column besides {target!r}.")
    if _missing_mask(y).any():
        raise CompareError(f"target column {target!r} has missing values.")
    X = np.column_stack(
        [_numeric_column(name, values) for name, values in columns.items()]
    )
    return split_train_test(path.stem, X, y, test_size, random_state)


def _pandas_or_none() -> Any:
    """Return the pandas module, or None: pandas is optional at runtime."""
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _read_csv_columns(path: Path) -> dict[str, np.ndarray]:
    """Read a CSV into ``{column: values}``; pandas parses numbers, else strings."""
    pandas = _pandas_or_none()
    if pandas is not None:
        frame = pandas.read_csv(path)
        return {str(name): frame[name].to_numpy() for name in frame.columns}
    with open(path, newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.reader(handle) if row]  # skip blank lines
    if not rows:
        raise ValueError("the file is empty")
    header, body = rows[0], rows[1:]
    bad = [i + 2 for i, row in enumerate(body) if len(row) != len(header)]
    if bad:
        raise ValueError(
            f"line {bad[0]} has a different number of fields than the header"
        )
    # Values stay strings; _numeric_column converts them (and names what fails).
    return {
        name: np.array([row[j] for row in body], dtype=object)
        for j, name in enumerate(header)
    }


def _missing_mask(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "f":
        return np.isnan(values)
    return np.array([_is_missing(value) for value in values], dtype=bool)


def _is_missing(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip() in {"", "NA", "NaN", "nan"}
    return value is None or (isinstance(value, float) and math.isnan(value))


def _numeric_column(name: str, values: np.ndarray) -> np.ndarray:
    """Return ``values`` as floats or raise a :class:`CompareError` naming ``name``."""
    if values.dtype.kind in "biuf":
        numbers = values.astype(np.float64)
    else:
        numbers = np.empty(len(values))
        for row, value in enumerate(values):
            try:
                numbers[row] = (
                    np.nan if _missing_mask(np.array([value])) else float(value)
                )
            except (TypeError, ValueError):
                raise CompareError(
                    f"feature column {name!r} is not numeric (value {value!r} in data "
                    f"row {row + 1}); compare needs numeric features: encode or drop "
                    "that column."
                ) from None
    if np.isnan(numbers).any():
        first = int(np.flatnonzero(np.isnan(numbers))[0])
        raise CompareError(
            f"feature column {name!r} has missing values (first in data row "
            f"{first + 1}); impute or drop them first."
        )
    return numbers
