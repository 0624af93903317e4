"""CSV input of ``compare``: one file with a header row and a label column.

What a data scientist's first file looks like, and what happens to it:

* the delimiter (``,``, ``;``, tab or ``|``) is sniffed from the first 64 KiB;
* in a ``;``-delimited file (the spreadsheet export of locales that write
  ``0,49``), columns of decimal-comma numbers are read as numbers, with a note;
* an identifier column -- unique per row and integer (or text), or named like
  ``id`` / ``*_id`` / ``index`` -- is dropped with a note, since as a feature it
  is noise at best and a leak at worst (``--keep COLS`` keeps it);
* ``--drop COLS`` drops columns by name;
* text columns stop the run with a message naming them, unless ``--one-hot``
  asks for one-hot encoding (one 0/1 column per distinct value);
* missing feature values stop the run with one message naming every column
  that has them, unless ``--impute`` (``allow_missing``) keeps them as NaN for
  the imputer that then starts every model's pipeline (a missing text value is
  then a category of its own under ``--one-hot``);
* infinite feature values stop the run, naming every such column;
* a label column of many distinct non-integer numbers is refused as a
  regression target.

The file is parsed with the standard library's :mod:`csv` module: one parser,
whatever is installed, so the same file gives the same dataset everywhere.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .datasets import Dataset, split_train_test
from .settings import CompareError

#: Cell values read as missing (compared in lower case, stripped).
MISSING_TOKENS = frozenset({"", "na", "nan", "n/a", "null", "none", "?"})

#: Column names that say "identifier".
_ID_NAME = re.compile(r"^(id|index|idx|row|row[ _]?id|unnamed: ?0)$|[ _]id$", re.I)

#: A numeric column with at least this many rows, integer and unique per row,
#: is an identifier (fewer rows: too likely to happen by chance).
MIN_ROWS_FOR_ID = 20

#: A numeric label with more distinct non-integer values than this looks like
#: a regression target.
MAX_FLOAT_CLASSES = 20

#: A number written with a decimal comma (``0,49``, ``-3,5e-2``), as
#: spreadsheets of comma-decimal locales export it with ``;`` delimiters.
_DECIMAL_COMMA = re.compile(r"^[-+]?\d+(,\d+)?([eE][-+]?\d+)?$")

#: ``--one-hot`` refuses text columns with more distinct values than this.
MAX_ONE_HOT_VALUES = 50

_SNIFF_BYTES = 64 * 1024


def load_csv(
    path: str | os.PathLike,
    target: str,
    test_size: float = 0.25,
    random_state: int = 0,
    drop: Sequence[str] = (),
    keep: Sequence[str] = (),
    one_hot: bool = False,
    allow_missing: bool = False,
) -> Dataset:
    """Load a CSV file (header row, a label column) and split it.

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
    drop : sequence of str, default=()
        Columns to leave out.
    keep : sequence of str, default=()
        Columns to keep even if they look like identifiers.
    one_hot : bool, default=False
        One-hot encode text columns instead of refusing them.
    allow_missing : bool, default=False
        Keep missing feature values as NaN (``--impute``: the pipeline imputes
        them) instead of refusing them; a missing text value becomes the
        category ``<missing>``.

    Returns
    -------
    Dataset
        The split; its ``notes`` say which columns were dropped or encoded.

    Raises
    ------
    CompareError
        If the file, the target or a named column is missing, the file has no
        data rows, a feature is text (without ``one_hot``), missing or
        infinite, the target looks continuous, or the split is impossible. The
        message names the column and, where there is one, the option that helps.
    """
    path = Path(path)
    if not path.is_file():
        raise CompareError(f"--csv: file not found: {str(path)!r}.")
    try:
        header, body, delimiter = _read_rows(path)
    except (OSError, UnicodeDecodeError, csv.Error, ValueError) as exc:
        raise CompareError(f"cannot read {str(path)!r}: {exc}") from exc
    columns = dict(zip(header, zip(*body, strict=True), strict=True)) if body else {}
    for option, names in (("--target", [target]), ("--drop", drop), ("--keep", keep)):
        unknown = [name for name in names if name not in header]
        if unknown:
            raise CompareError(
                f"{option}: no column {', '.join(map(repr, unknown))} in "
                f"{str(path)!r}; columns: {', '.join(map(repr, header))}."
            )
    if not body:
        raise CompareError(f"{str(path)!r} has no data rows (only a header).")
    notes = [f"read {len(body)} rows; delimiter {delimiter!r} (sniffed)"]
    if delimiter == ";":
        notes += _read_decimal_commas(columns)
    y = _labels(target, columns.pop(target))
    for name in drop:
        columns.pop(name, None)
    if drop:
        notes.append(f"dropped {', '.join(map(repr, drop))} (--drop)")
    notes += _drop_identifiers(columns, keep)
    if not columns:
        raise CompareError(f"{str(path)!r} has no feature column besides {target!r}.")
    features, text = {}, {}
    for name, values in columns.items():
        numbers = _as_numbers(values)
        if numbers is None:
            text[name] = values
        else:
            features[name] = numbers
    # Every problem of the file in one message: one fix, not one run each.
    problems = [_check_numbers(features, columns, allow_missing)]
    if text and not one_hot:
        examples = ", ".join(
            f"{name!r} (e.g. {_first_text(values)!r})" for name, values in text.items()
        )
        which = "text column" if len(text) == 1 else "text columns"
        which = which.capitalize() if problems[0] else which  # a second sentence
        verb, them = ("is", "it") if len(text) == 1 else ("are", "them")
        problems.append(
            f"{which} {examples} {verb} not numeric: add --one-hot to one-hot "
            f"encode {them}, or --drop {','.join(text)} to leave {them} out."
        )
    if any(problems):
        raise CompareError(" ".join(filter(None, problems)))
    if allow_missing:
        notes += _missing_note(features)
    for name, values in text.items():
        features.update(_one_hot(name, values, allow_missing))
    if text:
        notes.append(
            f"one-hot encoded {', '.join(map(repr, text))} (--one-hot; categories "
            "from the whole file)"
        )
    X = np.column_stack(list(features.values()))
    return split_train_test(path.stem, X, y, test_size, random_state, notes)


def _read_rows(path: Path) -> tuple[list[str], list[list[str]], str]:
    """Return the header, the non-blank data rows and the sniffed delimiter."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        sample = handle.read(_SNIFF_BYTES)
        if not sample.strip():
            raise ValueError("the file is empty")
        try:
            delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
        except csv.Error:  # one column, or too irregular to tell: the default
            delimiter = ","
        handle.seek(0)
        rows = [
            [cell.strip() for cell in row]
            for row in csv.reader(handle, delimiter=delimiter)
            if any(cell.strip() for cell in row)  # skip blank lines
        ]
    header, body = rows[0], rows[1:]
    duplicated = sorted({name for name in header if header.count(name) > 1})
    if duplicated:
        raise ValueError(
            f"duplicated column name(s) {', '.join(map(repr, duplicated))}"
        )
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise ValueError(
                f"data row {line - 1} has {len(row)} fields, the header "
                f"{len(header)} (delimiter {delimiter!r})"
            )
    return header, body, delimiter


def _is_missing(value: str) -> bool:
    return value.lower() in MISSING_TOKENS


def _as_numbers(values: Sequence[str]) -> np.ndarray | None:
    """Return the column as floats (NaN where missing), or None if it is text."""
    try:  # fast path: numpy parses the common case in one call
        return np.array(values, dtype=np.float64)
    except ValueError:
        pass
    numbers = np.empty(len(values))
    for row, value in enumerate(values):
        if _is_missing(value):
            numbers[row] = np.nan
            continue
        try:
            numbers[row] = float(value)
        except ValueError:
            return None
    return numbers


def _read_decimal_commas(columns: dict) -> list[str]:
    """Rewrite decimal-comma columns with decimal points (in place); return a note.

    A column qualifies when every value that is not missing is a number with
    an optional decimal comma and at least one has one; anything else (text,
    a mix with decimal points) is left as it is.
    """
    converted = []
    for name, values in columns.items():
        present = [value for value in values if not _is_missing(value)]
        if (
            present
            and any("," in value for value in present)
            and all(_DECIMAL_COMMA.match(value) for value in present)
        ):
            columns[name] = tuple(value.replace(",", ".") for value in values)
            converted.append(name)
    if not converted:
        return []
    example = next(v for v in columns[converted[0]] if "." in v)
    shown = ", ".join(map(repr, converted[:5]))
    more = f" and {len(converted) - 5} more" if len(converted) > 5 else ""
    return [
        f"decimal commas read as decimal points in {shown}{more} (e.g. "
        f"{example.replace('.', ',')!r} -> {float(example):g})"
    ]


def _first_text(values: Sequence[str]) -> str:
    return next(v for v in values if not _is_missing(v) and _as_numbers([v]) is None)


def _where(values: Sequence[str], mask: np.ndarray) -> str:
    """``"3 rows, first data row 8: 'NA'"`` for one column's bad cells."""
    rows = np.flatnonzero(mask)
    count = f"{rows.size} row{'s' if rows.size > 1 else ''}"
    return f"{count}, first data row {rows[0] + 1}: {values[rows[0]]!r}"


def _offending(features: dict, columns: dict, test) -> tuple[list[str], str]:
    """Return the columns where ``test`` (np.isinf, np.isnan) holds, and where."""
    masks = {name: test(numbers) for name, numbers in features.items()}
    masks = {name: mask for name, mask in masks.items() if mask.any()}
    listed = "; ".join(
        f"{name!r} ({_where(columns[name], mask)})" for name, mask in masks.items()
    )
    return list(masks), listed


def _check_numbers(features: dict, columns: dict, allow_missing: bool) -> str:
    """Refuse infinite values; describe missing ones unless ``allow_missing``.

    Every offending column is named in one message, so that a file with gaps
    in several columns needs one fix, not one run per column.

    Returns
    -------
    str
        The missing-value problem ("" if none or allowed), for the caller to
        report with any other.
    """
    infinite, listed = _offending(features, columns, np.isinf)
    if infinite:
        raise CompareError(
            f"feature column(s) with infinite values: {listed}; replace them or "
            f"--drop {','.join(infinite)}."
        )
    if allow_missing:
        return ""
    missing, listed = _offending(features, columns, np.isnan)
    if not missing:
        return ""
    return (
        f"{len(missing)} feature column(s) have missing values: {listed}. "
        "Add --impute median (or mean, most_frequent) to fill them inside "
        "every model's pipeline, fitted on the training split only, or "
        f"--drop {','.join(missing)}."
    )


def _missing_note(features: dict) -> list[str]:
    """Return the note of an ``--impute`` run: which columns have gaps, how many."""
    counts = {name: int(np.isnan(numbers).sum()) for name, numbers in features.items()}
    counts = {name: count for name, count in counts.items() if count}
    if not counts:
        return []
    listed = ", ".join(f"{name!r} ({count})" for name, count in counts.items())
    return [f"missing values (--impute fills them): {listed}"]


def _labels(target: str, values: Sequence[str]) -> np.ndarray:
    """Return the labels as integers, floats or strings; refuse regression targets."""
    missing = [row for row, value in enumerate(values) if _is_missing(value)]
    if missing:
        raise CompareError(
            f"target column {target!r} has missing values (first in data row "
            f"{missing[0] + 1}); drop those rows first."
        )
    numbers = _as_numbers(values)
    if numbers is None:
        return np.asarray(values, dtype=object).astype(str)
    if np.isinf(numbers).any():
        raise CompareError(f"target column {target!r} has infinite values.")
    if np.all(numbers == np.round(numbers)):
        return numbers.astype(np.int64)
    distinct = np.unique(numbers)
    if distinct.size > MAX_FLOAT_CLASSES:
        raise CompareError(
            f"target column {target!r} has {distinct.size} distinct non-integer "
            f"values (e.g. {', '.join(f'{v:g}' for v in distinct[:3])}): it looks "
            "like a regression target; compare needs class labels (bin it into "
            "classes first, or pick another --target)."
        )
    return numbers


def _drop_identifiers(columns: dict, keep: Sequence[str]) -> list[str]:
    """Remove identifier-like columns from ``columns`` (in place); return notes."""
    notes = []
    for name in [name for name in columns if name not in keep]:
        values = columns[name]
        unique = len(set(values)) == len(values)
        numbers = _as_numbers(values)
        integer_ids = (
            numbers is not None
            and len(values) >= MIN_ROWS_FOR_ID
            and bool(np.all(np.isfinite(numbers)))
            and bool(np.all(numbers == np.round(numbers)))
        )
        named_id = bool(_ID_NAME.search(name))
        if unique and (integer_ids or named_id or numbers is None):
            why = (
                "named like an identifier" if named_id else "an integer"
            ) + " and unique per row"
            if numbers is None and not named_id:
                why = "text and unique per row"
            del columns[name]
            notes.append(
                f"dropped column {name!r}: {why}, it looks like a row ID "
                f"(--keep {name} to use it as a feature)"
            )
        elif named_id:
            notes.append(
                f"column {name!r} is named like an identifier but repeats: kept as "
                f"a feature (--drop {name} to leave it out)"
            )
    return notes


#: The category of a missing text value under ``--impute``.
MISSING_CATEGORY = "<missing>"


def _one_hot(
    name: str, values: Sequence[str], allow_missing: bool = False
) -> dict[str, np.ndarray]:
    """One 0/1 column ``name=value`` per distinct value of a text column.

    With ``allow_missing`` a missing value is a category of its own
    (:data:`MISSING_CATEGORY`): whether a value is missing is often
    informative, and one-hot columns cannot be imputed meaningfully.
    """
    missing = [row for row, value in enumerate(values) if _is_missing(value)]
    if missing and not allow_missing:
        raise CompareError(
            f"text column {name!r} has missing values (first in data row "
            f"{missing[0] + 1}); --impute makes them a category of their own, "
            f"or fill them yourself, or --drop {name}."
        )
    values = [MISSING_CATEGORY if _is_missing(value) else value for value in values]
    categories = sorted(set(values))
    if len(categories) > MAX_ONE_HOT_VALUES:
        raise CompareError(
            f"text column {name!r} has {len(categories)} distinct values, too many "
            f"to one-hot encode (at most {MAX_ONE_HOT_VALUES}); --drop {name} or "
            "encode it yourself."
        )
    column = np.asarray(values, dtype=object)
    return {
        f"{name}={value}": (column == value).astype(np.float64) for value in categories
    }
