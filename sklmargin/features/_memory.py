"""The memory budget of a kernel fit: what a width costs, what the machine holds.

A kernel fit holds its mapped training rows, ``n x M`` in the compute dtype,
for the whole L-BFGS solve; the Nyström map factors the ``M x M`` kernel
matrix of its centres in float64 (the matrix, its eigenvectors and LAPACK's
workspace); the map, the start and the objective work in row blocks of
:data:`sklmargin._utils.blocks.BLOCK_BYTES`. :func:`fit_bytes` adds these up,
and :func:`memory_budget` says how many bytes a fit may take: a share
(:data:`MEMORY_FRACTION`) of the memory available when the fit starts, so
that the budget grows with the machine. A width beyond the budget is refused
before anything is allocated (:func:`check_fit_memory`: a ``ValueError``
naming the sizes) instead of an out-of-memory crash or swap, and
``n_components="auto"`` never asks for more than the budget holds
(:func:`widest_width`). Predict maps its rows in blocks of at most
:data:`PREDICT_BLOCK_BYTES` of features (:func:`in_row_blocks`).

Override the budget with :data:`MEMORY_BUDGET` (bytes, this module) or the
environment variable ``SKLMARGIN_MEMORY_BUDGET`` (bytes; the module setting
wins): for tests, for a machine shared with other work, or to fit past the
default share knowingly.
"""

from __future__ import annotations

import math
import os
from typing import NamedTuple

from .._utils import blocks
from .._utils.array_api import get_namespace

#: Share of the memory available at fit time that a fit may take.
MEMORY_FRACTION = 0.5
#: The budget in bytes when not None (wins over the environment and the RAM).
MEMORY_BUDGET = None
#: Environment variable that fixes the budget in bytes.
BUDGET_VARIABLE = "SKLMARGIN_MEMORY_BUDGET"
#: float64 ``M x M`` arrays the Nyström factorisation holds at its peak (the
#: kernel matrix, its eigenvectors and the eigensolver's workspace).
WHITENING_COPIES = 3
#: Row blocks alive at once beside the mapped rows (the map's and the objective's).
BLOCK_COPIES = 2
#: Bytes of mapped rows predict computes at once (one block of rows).
PREDICT_BLOCK_BYTES = 256 * 2**20


def available_memory():
    """Bytes of memory available now; None where the platform does not say.

    ``MemAvailable`` of ``/proc/meminfo`` (Linux: free memory plus the caches
    the kernel can drop), else ``os.sysconf``'s available physical pages.
    """
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def device_memory(X):
    """Free bytes of the accelerator that holds ``X``; None for host rows.

    torch CUDA tensors ask ``torch.cuda.mem_get_info``, CuPy arrays their
    device's ``mem_info``; rows on the host (NumPy, SciPy, torch cpu) give
    None: :func:`available_memory` is theirs.
    """
    device = getattr(X, "device", None)
    if getattr(device, "type", None) == "cuda":  # torch
        try:
            import torch

            return int(torch.cuda.mem_get_info(device)[0])
        except Exception:  # noqa: BLE001 (no answer: the host's budget)
            return None
    if type(X).__module__.startswith("cupy"):
        try:
            return int(X.device.mem_info[0])
        except Exception:  # noqa: BLE001
            return None
    return None


def memory_budget(X=None):
    """Bytes a kernel fit may take: :data:`MEMORY_FRACTION` of the available memory.

    :data:`MEMORY_BUDGET` when set, else ``SKLMARGIN_MEMORY_BUDGET`` when set
    (a positive number of bytes), else half of the free memory of the
    accelerator holding ``X`` (:func:`device_memory`) or of the host's
    (:func:`available_memory`); ``math.inf`` (no limit) where the platform
    does not report its memory.
    """
    if MEMORY_BUDGET is not None:
        return float(MEMORY_BUDGET)
    fixed = os.environ.get(BUDGET_VARIABLE)
    if fixed:
        try:
            value = float(fixed)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise ValueError(
                f"{BUDGET_VARIABLE} must be a positive number of bytes; got {fixed!r}."
            )
        return value
    available = device_memory(X) if X is not None else None
    if available is None:
        available = available_memory()
    return math.inf if available is None else MEMORY_FRACTION * available


class FitSize(NamedTuple):
    """What a kernel fit holds beside ``n x M`` mapped rows (:func:`fit_bytes`).

    ``whitening``: the float64 ``M x M`` whitening of a Nyström map (none
    for the random Fourier maps); ``factor_rows``: the float64 ``n x M``
    factor of randomly pivoted Cholesky centres; ``dense_columns``: the
    dense rows the map works on beside the mapped rows (sparse rows
    densified, the path's copies of the rows); ``copies``: of the mapped
    rows (one for a fit, more for the width path).
    """

    whitening: bool = True
    factor_rows: bool = False
    dense_columns: int = 0
    copies: int = 1


#: A plain Nyström fit: one copy of the mapped rows and the whitening.
NYSTROEM_FIT = FitSize()


def fit_bytes(n_samples, width, itemsize, size=NYSTROEM_FIT):
    """Bytes a kernel fit of ``n_samples`` rows and ``width`` centres holds at its peak.

    ``size.copies`` of the mapped rows (``n x M x itemsize`` each), the
    float64 ``M x M`` whitening of a Nyström map (:data:`WHITENING_COPIES` of
    it), :data:`BLOCK_COPIES` row blocks, for randomly pivoted Cholesky
    centres (``size.factor_rows``) their float64 ``n x M`` factor, and the
    dense rows the map works on beside them (``n x size.dense_columns x
    itemsize``): :class:`FitSize`.
    """
    n, m, item = int(n_samples), int(width), int(itemsize)
    need = size.copies * n * m * item
    need += WHITENING_COPIES * 8 * m * m if size.whitening else 0
    need += BLOCK_COPIES * blocks.BLOCK_BYTES + _dense_bytes(n, size, itemsize)
    if size.factor_rows:
        need += 8 * n * m
    return need


def _dense_bytes(n_samples, size, itemsize):
    return int(n_samples) * int(size.dense_columns) * int(itemsize)


def widest_width(n_samples, itemsize, size=NYSTROEM_FIT, budget=None, X=None):
    """Return the largest width whose fit (:func:`fit_bytes`) holds in the budget.

    0 when not even one component fits; ``math.inf`` without a budget.
    """
    budget = memory_budget(X) if budget is None else budget
    if math.isinf(budget):
        return math.inf
    # The largest integer m with a m^2 + b m + c <= 0.
    a = WHITENING_COPIES * 8 if size.whitening else 0
    b = int(n_samples) * (size.copies * int(itemsize) + (8 if size.factor_rows else 0))
    c = BLOCK_COPIES * blocks.BLOCK_BYTES - budget
    c += _dense_bytes(n_samples, size, itemsize)
    if c > 0:
        return 0
    root = -c / b if a == 0 else (-b + math.sqrt(b * b - 4.0 * a * c)) / (2.0 * a)
    width = int(root)
    while width > 0 and fit_bytes(n_samples, width, itemsize, size) > budget:
        width -= 1  # (round-off of the square root)
    return width


def _mib(size):
    return f"{size / 2**20:,.0f} MiB"


def check_fit_memory(
    n_samples, width, itemsize, size=NYSTROEM_FIT, X=None, budget=None
):
    """Raise a ValueError naming the sizes when a fit would exceed the budget.

    Called before the fit allocates its mapped rows or factors its centres;
    ``X``, the training rows, says which memory (host or accelerator);
    ``budget``, when given, is the budget the caller chose its width in (the
    free memory is read once per fit, so a width "auto" chose is not refused
    by a second, lower reading).
    """
    budget = memory_budget(X) if budget is None else budget
    need = fit_bytes(n_samples, width, itemsize, size)
    if need <= budget:
        return
    widest = widest_width(n_samples, itemsize, size, budget=budget)
    dense = _dense_bytes(n_samples, size, itemsize)
    source = f"{MEMORY_FRACTION:g} of the memory available now"
    if X is not None and device_memory(X) is not None:
        source = f"{MEMORY_FRACTION:g} of the free memory of the device holding X"
    if os.environ.get(BUDGET_VARIABLE):
        source = BUDGET_VARIABLE
    if MEMORY_BUDGET is not None:
        source = "MEMORY_BUDGET"
    mapped = int(n_samples) * int(width) * int(itemsize)
    raise ValueError(
        f"A kernel fit of {int(n_samples)} rows x {int(width)} components x "
        f"{int(itemsize)} bytes needs {_mib(need)} ("
        + (f"{size.copies} copies of " if size.copies > 1 else "")
        + f"the mapped rows {_mib(size.copies * mapped)}"
        + (f", the {int(width)} x {int(width)} whitening" if size.whitening else "")
        + (
            f", the {int(n_samples)} x {int(width)} float64 Cholesky factor of "
            "the centre selection"
            if size.factor_rows
            else ""
        )
        + (
            f", the dense rows the map works on ({int(n_samples)} x "
            f"{int(size.dense_columns)}: {_mib(dense)})"
            if dense
            else ""
        )
        + " and the row blocks), more than "
        f"the memory budget of {_mib(budget)} ({source}; "
        "sklmargin.features._memory.MEMORY_BUDGET or the environment variable "
        f"{BUDGET_VARIABLE} set it). Lower n_components (at most {widest} fit), "
        "use n_components='auto'"
        + (", compute_dtype='float32'" if int(itemsize) > 4 else "")
        + " or fewer rows."
    )


def in_row_blocks(logits_of, X, width, itemsize):
    """``logits_of(X)`` computed on row blocks whose mapped rows stay bounded.

    Each block maps at most :data:`PREDICT_BLOCK_BYTES` of features
    (``width * itemsize`` bytes a row): a predict on many rows never holds all
    of them mapped. Every step of a prediction is per row, so the blocks
    change nothing but the memory.
    """
    block = blocks.rows_per_block(int(width) * int(itemsize), PREDICT_BLOCK_BYTES)
    n_rows = X.shape[0]
    if n_rows <= block:
        return logits_of(X)
    starts = range(0, n_rows, block)
    parts = [logits_of(X[start : start + block, :]) for start in starts]
    return get_namespace(X)[0].concat(parts, axis=0)
