"""Datasets of ``compare``: scikit-learn's bundled data and folders of ``.npz`` splits.

CSV files are read by :mod:`sklmargin.compare.csvfile`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

from .settings import CompareError, split_list

#: Datasets bundled with scikit-learn: the default run needs no files.
BUILTIN_DATASETS = ("digits", "wine", "breast_cancer", "iris")


@dataclass(frozen=True)
class Dataset:
    """A named train/test split.

    Parameters
    ----------
    name : str
        Name shown in the table and the output files.
    X_train, y_train, X_test, y_test : ndarray
        The split; features are float, labels of any type.
    notes : tuple of str, default=()
        What loading changed or found (columns dropped or encoded), to print.
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    notes: tuple = ()

    @property
    def n_train(self) -> int:
        """Number of training samples."""
        return int(self.X_train.shape[0])

    @property
    def n_test(self) -> int:
        """Number of test samples."""
        return int(self.X_test.shape[0])

    @property
    def n_features(self) -> int:
        """Number of features."""
        return int(self.X_train.shape[1])

    @property
    def n_classes(self) -> int:
        """Number of classes in the training split."""
        return int(np.unique(self.y_train).size)

    def describe(self) -> dict[str, int]:
        """Return the sizes reported with every result row."""
        return {
            "n_train": self.n_train,
            "n_test": self.n_test,
            "n_features": self.n_features,
            "n_classes": self.n_classes,
        }


def split_train_test(
    name: str,
    X: np.ndarray,
    y: np.ndarray,
    test_size: float,
    random_state: int,
    notes: Sequence[str] = (),
) -> Dataset:
    """Split ``X, y`` into a stratified train/test :class:`Dataset`.

    Parameters
    ----------
    name : str
        Dataset name.
    X : ndarray of shape (n_samples, n_features)
        Features.
    y : ndarray of shape (n_samples,)
        Labels.
    test_size : float
        Fraction of samples in the test split, in (0, 1).
    random_state : int
        Seed of the split.
    notes : sequence of str, default=()
        Stored with the dataset.

    Returns
    -------
    Dataset
        The split.

    Raises
    ------
    CompareError
        If the data has fewer than two classes or a class is too small to appear
        in both splits.
    """
    if np.unique(y).size < 2:
        raise CompareError(f"{name}: the target has fewer than two classes.")
    try:
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=test_size, random_state=random_state, stratify=y
        )
    except ValueError as exc:
        raise CompareError(f"{name}: cannot make a stratified split: {exc}") from exc
    return Dataset(name, X_train, y_train, X_test, y_test, tuple(notes))


def check_no_missing(dataset: Dataset) -> None:
    """Refuse NaN features (without ``--impute``), naming every such column.

    Raises
    ------
    CompareError
        Naming the dataset, the columns (0-based indices) and ``--impute``.
    """
    columns = np.flatnonzero(
        np.isnan(np.asarray(dataset.X_train, dtype=np.float64)).any(axis=0)
        | np.isnan(np.asarray(dataset.X_test, dtype=np.float64)).any(axis=0)
    )
    if columns.size:
        shown = ", ".join(map(str, columns[:20]))
        more = f" and {columns.size - 20} more" if columns.size > 20 else ""
        raise CompareError(
            f"{dataset.name}: {columns.size} feature column(s) have missing values "
            f"(NaN): columns {shown}{more} (0-based). Add --impute median (or mean, "
            "most_frequent) to fill them inside every model's pipeline."
        )


def select_names(available: Sequence[str], requested: str | None, what: str) -> list:
    """Return the names of ``requested`` (comma-separated) found in ``available``.

    Parameters
    ----------
    available : sequence of str
        Names that exist, in the order to keep when nothing is requested.
    requested : str or None
        Comma-separated selection; ``None`` selects everything.
    what : str
        What the names are ("dataset", ...), for the error message.

    Returns
    -------
    list of str
        The selection, in the requested order, without duplicates.

    Raises
    ------
    CompareError
        If a requested name does not exist; the message lists the valid names.
    """
    if requested is None:
        return list(available)
    wanted = split_list(requested)
    if not wanted:
        raise CompareError(f"no {what} names given.")
    unknown = [name for name in wanted if name not in available]
    if unknown:
        raise CompareError(
            f"unknown {what}(s) {', '.join(map(repr, unknown))}; "
            f"available: {', '.join(available)}."
        )
    return wanted


def builtin_datasets(
    names: str | None = None, test_size: float = 0.25, random_state: int = 0
) -> list[Dataset]:
    """Load scikit-learn's bundled datasets with a fixed stratified split.

    Parameters
    ----------
    names : str, default=None
        Comma-separated subset of :data:`BUILTIN_DATASETS`; ``None`` for all.
    test_size : float, default=0.25
        Fraction of samples in the test split.
    random_state : int, default=0
        Seed of the split.

    Returns
    -------
    list of Dataset
        One split per dataset.
    """
    selected = select_names(BUILTIN_DATASETS, names, "dataset")
    result = []
    for name in selected:
        X, y = load_builtin(name)
        result.append(split_train_test(name, X, y, test_size, random_state))
    return result


def load_builtin(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Return ``X, y`` of one of scikit-learn's bundled datasets, unsplit.

    Parameters
    ----------
    name : str
        One of :data:`BUILTIN_DATASETS`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)

    Raises
    ------
    CompareError
        If ``name`` is not one of them; the message lists the valid names.
    """
    from sklearn import datasets as sk_datasets

    if name not in BUILTIN_DATASETS:
        raise CompareError(
            f"unknown dataset {name!r}; available: {', '.join(BUILTIN_DATASETS)}."
        )
    return getattr(sk_datasets, f"load_{name}")(return_X_y=True)


def load_npz_dir(directory: str | os.PathLike, names: str | None = None) -> list:
    """Load every ``NAME.npz`` in a folder, sorted by name.

    Each file holds ``X_train``, ``y_train``, ``X_test`` and ``y_test``; the split
    is used as given.

    Parameters
    ----------
    directory : path-like
        The folder.
    names : str, default=None
        Comma-separated subset of the file stems; ``None`` for all.

    Returns
    -------
    list of Dataset
        One per selected file.

    Raises
    ------
    CompareError
        If the folder does not exist, holds no ``.npz`` file, a requested name is
        missing or a file lacks one of the four arrays.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise CompareError(f"--data: {str(directory)!r} is not a directory.")
    files = {path.stem: path for path in sorted(directory.glob("*.npz"))}
    if not files:
        raise CompareError(f"--data: no .npz files in {str(directory)!r}.")
    return [
        load_npz(name, files[name]) for name in select_names(files, names, "dataset")
    ]


def load_npz(name: str, path: str | os.PathLike) -> Dataset:
    """Load one ``.npz`` split (``X_train``, ``y_train``, ``X_test``, ``y_test``).

    Parameters
    ----------
    name : str
        Name of the dataset.
    path : path-like
        The file; pickled objects are refused (a data file must not run code).

    Returns
    -------
    Dataset
        The split as stored, labels flattened to 1-D.

    Raises
    ------
    CompareError
        If the file cannot be read, lacks one of the four arrays, or their
        shapes disagree.
    """
    keys = ("X_train", "y_train", "X_test", "y_test")
    try:
        # allow_pickle=False: a data file must never be able to run code.
        with np.load(path, allow_pickle=False) as data:
            missing = [key for key in keys if key not in data.files]
            if missing:
                raise CompareError(
                    f"{str(path)!r} lacks {', '.join(missing)} (expected arrays: "
                    f"{', '.join(keys)})."
                )
            X_train, y_train, X_test, y_test = (data[key] for key in keys)
    except (OSError, ValueError) as exc:
        raise CompareError(f"cannot read {str(path)!r}: {exc}") from exc
    if X_train.ndim != 2 or X_test.ndim != 2 or X_train.shape[1] != X_test.shape[1]:
        raise CompareError(
            f"{str(path)!r}: X_train and X_test must be 2-D with the same number "
            f"of columns; got shapes {X_train.shape} and {X_test.shape}."
        )
    if len(y_train) != len(X_train) or len(y_test) != len(X_test):
        raise CompareError(f"{str(path)!r}: X and y lengths differ.")
    return Dataset(name, X_train, y_train.ravel(), X_test, y_test.ravel())
