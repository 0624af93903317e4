"""``python -m sklmargin compare``: sklmargin's classifiers against scikit-learn.

One concern per module:

* :mod:`~sklmargin.compare.datasets` -- bundled data and ``.npz`` folders;
  :mod:`~sklmargin.compare.csvfile` -- CSV files;
* :mod:`~sklmargin.compare.models` -- the peers, our models and their grids;
  :mod:`~sklmargin.compare.grids` -- ``--grid``, checked before any fit;
* :mod:`~sklmargin.compare.protocol` -- tuning, timing, scoring, the run;
  :mod:`~sklmargin.compare.progress` -- progress lines on stderr;
  :mod:`~sklmargin.compare.estimate` -- the run's estimate and ETA;
* :mod:`~sklmargin.compare.report` -- tables, JSON/CSV results;
  :mod:`~sklmargin.compare.plot` -- the plot;
* :mod:`~sklmargin.compare.cli` -- the command line.

The protocol: ``Pipeline([StandardScaler(), model])``
fitted on the training split, scored once on the test split, tuned (optionally)
by 3-fold CV on the training split with the same number of grid points for
every model, times as medians and as ratios against LinearSVC and
LogisticRegression measured in the same run.
"""

from .cli import register, run_compare
from .csvfile import load_csv
from .datasets import BUILTIN_DATASETS, Dataset, builtin_datasets, load_npz_dir
from .models import (
    C_GRID,
    DEFAULT_MODELS,
    ModelSpec,
    build_pipeline,
    grid_size,
    grid_size_note,
    grid_sizes,
    model_registry,
    resolve_models,
)
from .plot import plot_results
from .progress import Progress
from .protocol import (
    evaluate_model,
    run_comparison,
    summarize_warnings,
    tune,
    wilson_interval,
)
from .report import format_table, write_results
from .settings import (
    GRID_POINTS,
    REFERENCE_MODELS,
    ROW_FIELDS,
    CompareError,
    CompareSettings,
    format_number,
)

__all__ = [
    "BUILTIN_DATASETS",
    "C_GRID",
    "DEFAULT_MODELS",
    "GRID_POINTS",
    "REFERENCE_MODELS",
    "ROW_FIELDS",
    "CompareError",
    "CompareSettings",
    "Dataset",
    "ModelSpec",
    "Progress",
    "build_pipeline",
    "builtin_datasets",
    "grid_size_note",
    "grid_sizes",
    "evaluate_model",
    "format_number",
    "format_table",
    "grid_size",
    "load_csv",
    "load_npz_dir",
    "model_registry",
    "plot_results",
    "register",
    "resolve_models",
    "run_comparison",
    "run_compare",
    "summarize_warnings",
    "tune",
    "wilson_interval",
    "write_results",
]
