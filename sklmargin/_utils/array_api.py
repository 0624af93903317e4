"""Array API helpers: which namespace an input lives in, and moving arrays.

With ``sklearn.set_config(array_api_dispatch=True)`` the estimators and the
feature maps fit and predict on array API inputs (torch tensors,
array-api-strict arrays, CuPy arrays) in their own namespace and on their own
device, with the code NumPy input runs. This module is the one home of what
that code asks about arrays, written as small own helpers rather than
scikit-learn's private ones:

* which namespace: :func:`get_namespace`, always a namespace (:data:`NUMPY`
  for NumPy, sparse and Dask rows, and for a user's input with dispatch off),
  and the wide dtype accumulations run in (:func:`wide_dtype`);
* moving arrays: :func:`to_numpy`, :func:`to_device`, :func:`take_rows`,
  :func:`host_inputs` and :func:`host_weights` (labels and weights of any
  namespace on the host: "everything follows X"), :func:`move_fitted_arrays`
  (fitted arrays to the fit's device) and :func:`in_float64` (the float64
  fallback, on the host where the device has none);
* working by row blocks: :func:`row_blocks` and :class:`RowBlockWriter`;
* a feature map's input: :func:`check_fit_input`, and
  :func:`check_transform_input`, which refuses input of another namespace or
  device than the fit's (:func:`check_same_namespace`, as predict does).

The namespace comes from ``array_api_compat`` (the package when installed,
else the copy scikit-learn vendors, see :mod:`sklmargin._utils.compat`);
nothing here imports torch, CuPy or array-api-strict.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn import get_config
from sklearn.utils.validation import check_is_fitted, validate_data

from . import blocks
from .compat import array_api_compat


def dispatch_enabled():
    """Whether ``sklearn.set_config(array_api_dispatch=True)`` is in force."""
    return bool(get_config().get("array_api_dispatch", False))


def _is_host(array):
    """NumPy arrays, scalars, lists, sparse matrices, pandas objects, None."""
    if array is None or isinstance(array, (np.ndarray, np.generic, list, tuple)):
        return True
    if sparse.issparse(array) or array_api_compat is None:
        return True
    return array_api_compat.is_numpy_array(array) or not (
        array_api_compat.is_array_api_obj(array)
    )


def has_bit_views(X):
    """Whether ``X`` is a torch or CuPy array (whose ``view`` reinterprets bits).

    The array API standard has no bit cast; these two libraries' arrays take
    ``view(int64)`` of float64 data, which row hashing on a device needs.
    """
    if _is_host(X):
        return False
    return bool(array_api_compat.is_torch_array(X) or array_api_compat.is_cupy_array(X))


def is_dask(X):
    """Whether ``X`` is a Dask collection, told without importing Dask.

    From the type's module name: a NumPy fit imports neither Dask nor
    sklmargin's Dask code (a test checks ``sys.modules``).
    """
    return type(X).__module__.startswith("dask.")


#: NumPy as an array API namespace: NumPy itself from 2.1 on (it then has
#: ``astype``, ``concat``, ``clip(min=)`` and ``device=``), array_api_compat's
#: wrapper of it on older NumPy. :func:`get_namespace` returns it for host
#: rows, and ``xp is NUMPY`` marks the NumPy code path (in-place leaf kernels,
#: sparse products).
NUMPY = (
    np
    if np.lib.NumpyVersion(np.__version__) >= "2.1.0" or array_api_compat is None
    else array_api_compat.numpy
)


def get_namespace(X, *, user_input=False):
    """Return ``(xp, device)``: the namespace ``X`` computes in, and its device.

    :data:`NUMPY` and ``"cpu"`` for NumPy arrays, sparse matrices, lists, data
    frames and Dask collections (the maps and chunks read Dask as NumPy), the
    array's own array API namespace and device otherwise. ``xp`` is always a
    namespace: ``xp is NUMPY`` tells the NumPy path.

    Parameters
    ----------
    X : array-like
    user_input : bool, default=False
        ``X`` is what a user passed to ``fit`` or ``predict``: an array API
        array counts as one only under ``sklearn.set_config(
        array_api_dispatch=True)``, scikit-learn's rule (with dispatch off
        scikit-learn converts it with ``np.asarray``). Validated rows, which
        are in their namespace already, pass False.
    """
    if isinstance(X, np.ndarray) or _is_host(X) or is_dask(X):
        # array_api_compat wraps Dask arrays too, but the estimators have a
        # Dask path and the maps read Dask as NumPy (the documented
        # behaviour): the device path would make their fitted arrays Dask.
        return NUMPY, "cpu"
    if user_input and not dispatch_enabled():
        return NUMPY, "cpu"
    return array_api_compat.array_namespace(X), array_api_compat.device(X)


def namespace_name(array):
    """Short name of an array's library, for error messages."""
    if _is_host(array):
        return "numpy" if array is not None else "None"
    # "array_api_compat.torch", or "sklearn.externals.array_api_compat.torch"
    # for scikit-learn's vendored copy: the library's name is what follows.
    return array_api_compat.array_namespace(array).__name__.rpartition(
        "array_api_compat."
    )[2]


def to_numpy(array):
    """Return a NumPy copy (or view) of ``array`` on the host; NumPy as is."""
    if _is_host(array):
        return np.asarray(array)
    if array_api_compat.is_torch_array(array):
        return array.detach().cpu().numpy()
    if array_api_compat.is_cupy_array(array):  # pragma: no cover - needs a GPU
        return array.get()
    xp = array_api_compat.array_namespace(array)
    if xp.__name__ == "array_api_strict":
        return np.asarray(xp.asarray(array, device=xp.Device("CPU_DEVICE")))
    try:
        return np.from_dlpack(array)
    except (AttributeError, TypeError, BufferError, RuntimeError, ValueError):
        return np.asarray(array)


def to_device(array, xp, device, dtype=None):
    """``array`` (NumPy or already in ``xp``) as an ``xp`` array on ``device``."""
    if dtype is not None and isinstance(array, np.ndarray):
        array = array.astype(numpy_dtype(dtype), copy=False)
    if not _is_host(array):
        if array_api_compat.array_namespace(array) is not xp:
            array = to_numpy(array)
        elif array_api_compat.device(array) != device:
            array = xp.asarray(array, device=device, copy=True)
    result = xp.asarray(array, device=device)
    if dtype is not None and result.dtype != dtype:
        result = xp.astype(result, dtype)
    return result


def take_rows(X, indices, xp, device):
    """Rows ``indices`` (host integers) of ``X``, cut where ``X`` lives.

    ``xp.take`` on a device: the array API standard indexes with arrays of
    its own namespace only (array-api-strict enforces it).
    """
    if xp is NUMPY:
        return X[indices]
    indices = to_device(np.asarray(indices, dtype=np.int64), xp, device)
    return xp.take(X, indices, axis=0)


def numpy_dtype(dtype):
    """Return the NumPy dtype of the same name as an array API dtype.

    CuPy's (and ``array_api_compat.numpy``'s) dtypes *are* NumPy's scalar
    types (``cupy.float64 is numpy.float64``), whose ``str`` is
    ``"<class 'numpy.float64'>"``: those convert directly; torch's and
    array-api-strict's (``torch.float64``, ``array_api_strict.float64``) by
    the name after the last dot.
    """
    if isinstance(dtype, np.dtype):
        return dtype
    if isinstance(dtype, type) and issubclass(dtype, np.generic):
        return np.dtype(dtype)
    name = str(dtype).rsplit(".", 1)[-1]
    return np.dtype(name)


def float64_supported(xp, device):
    """Whether ``device`` computes in float64 (not Apple's MPS, for one)."""
    try:
        xp.zeros(1, dtype=xp.float64, device=device)
    except (TypeError, RuntimeError, ValueError):  # pragma: no cover - needs MPS
        return False
    return True


def wide_dtype(xp, device):
    """Return the widest float ``device`` computes in: float64, else float32 (MPS).

    Accumulations (norms, sums, the loss) run in it, as the NumPy path's run
    in float64.
    """
    if xp is NUMPY:
        return np.float64
    return xp.float64 if float64_supported(xp, device) else xp.float32


def in_float64(xp, device, *arrays):
    """Return ``arrays`` in float64: in ``xp``, or on the host (no float64)."""
    if xp is NUMPY:  # the arrays' own astype: a CSR block stays CSR
        return [array.astype(np.float64) for array in arrays]
    if wide_dtype(xp, device) == xp.float64:
        return [xp.astype(array, xp.float64) for array in arrays]
    return [to_numpy(array).astype(np.float64) for array in arrays]


def max_abs(X) -> float:
    """Largest magnitude of a dense, CSR or device array (0 when empty)."""
    data = X.data if sparse.issparse(X) else X
    if isinstance(data, np.ndarray):
        return float(np.max(np.abs(data), initial=0.0))
    xp = array_api_compat.array_namespace(data)
    return float(xp.max(xp.abs(data)))


#: Block-sized temporaries a namespace block holds at once. The NumPy code
#: reuses one buffer per block through ``out=``, which the array API standard
#: lacks: a namespace block allocates a new array per operation, and up to
#: this many are alive together (a distance block, its clipped copy, its
#: exponential; a projection and two feature groups).
_NAMESPACE_TEMPORARIES = 4


def row_blocks(X, row_bytes):
    """Row slices of ``X`` for ``row_bytes`` temporary bytes per row.

    :func:`sklmargin._utils.blocks.rows_per_block` rows each (read at call
    time: the tests that shrink the budget shrink these blocks too). NumPy
    and sparse rows, which write their blocks ``out=``, take the whole
    budget; rows of another namespace a share of it, for ``row_bytes`` times
    :data:`_NAMESPACE_TEMPORARIES`: the temporaries of a block, together,
    stay within the budget, as the NumPy code's do. Smaller temporaries also
    stay small in the allocator: with one budget per temporary, a torch
    kernel fit of 100k x 500 features peaked at 1.3-1.9x the NumPy fit's
    resident memory (freed blocks kept by glibc), with a quarter at 1.0-1.3x
    (``docs/array_api.rst``, device memory).
    """
    if not (isinstance(X, np.ndarray) or sparse.issparse(X)):
        row_bytes *= _NAMESPACE_TEMPORARIES
    n_rows, block = X.shape[0], blocks.rows_per_block(row_bytes)
    return [
        slice(start, min(start + block, n_rows)) for start in range(0, n_rows, block)
    ]


def check_same_namespace(fitted, X, name, method, xp, device, verb="predict"):
    """Refuse ``X`` from another namespace or device than a fitted array's.

    Parameters
    ----------
    fitted : array
        A fitted attribute (``coef_``, a map's ``components_``): NumPy after a
        NumPy fit, on the fit's device after an array API fit.
    X : array
        The input of ``method``.
    name : str
        What the user called, for the message (``"NystroemFeatures.transform()"``).
    method : str
        The method's name (``"transform"``).
    xp, device : namespace and device of ``X``
        As returned by :func:`get_namespace` (``user_input=True``).
    verb : str, default="predict"
        What the user would do on the device, for the dispatch-off hint.

    Raises
    ------
    ValueError
        Naming both namespaces (or both devices) and the remedies.
    """
    fitted_name = namespace_name(fitted)
    given = "numpy" if xp is NUMPY else namespace_name(X)
    if fitted_name == given:
        fitted_device = (
            array_api_compat.device(fitted) if fitted_name != "numpy" else "cpu"
        )
        if xp is NUMPY or fitted_device == device:
            return
        detail = f"Devices used during fit ({fitted_device}) and {method} ({device})"
    else:
        detail = (
            f"Array namespaces used during fit ({fitted_name}) and {method} ({given})"
        )
    # With dispatch off every input is read as NumPy (a cpu tensor included):
    # the likely cause is a session that fitted with dispatch on.
    hint = (
        " array_api_dispatch is off, so X was read as NumPy: turn it on with "
        f"sklearn.set_config(array_api_dispatch=True) to {verb} on the device."
        if not dispatch_enabled() and fitted_name != "numpy"
        else ""
    )
    raise ValueError(
        f"Inputs passed to {name} must use the same namespace and the same device "
        f"as those passed to fit(). {detail} differ. Move X to the fit's "
        "namespace and device, or move the estimator to X's with scikit-learn's "
        f"move_estimator_to.{hint}"
    )


def check_fit_input(transformer, X, sample_weight, accept_sparse=False):
    """Validate a feature map's ``fit`` input.

    Returns ``(X, sample_weight, xp, device)``: ``X`` validated in its
    namespace (:func:`get_namespace`), the weights on the host
    (:func:`host_weights`).
    """
    xp, device = get_namespace(X, user_input=True)
    X = validate_data(
        transformer, X, accept_sparse=accept_sparse, dtype=[xp.float64, xp.float32]
    )
    return X, host_weights(sample_weight, X.shape[0]), xp, device


def check_transform_input(transformer, X, fitted, accept_sparse=False):
    """Validate ``transform``'s ``X`` against the fit: ``(X, xp, device)``.

    ``fitted`` names a fitted array attribute, NumPy after a host fit and on
    the fit's device after a device fit: input of another namespace or device
    is refused with the estimators' message (:func:`check_same_namespace`).
    """
    check_is_fitted(transformer)
    xp, device = get_namespace(X, user_input=True)
    check_same_namespace(
        getattr(transformer, fitted), X, f"{type(transformer).__name__}.transform()",
        "transform", xp, device, verb="transform",
    )  # fmt: skip
    X = validate_data(
        transformer, X, accept_sparse=accept_sparse,
        dtype=[xp.float64, xp.float32], reset=False,
    )  # fmt: skip
    return X, xp, device


def move_fitted_arrays(fitted, names, xp, device):
    """Move the NumPy arrays among the attributes ``names`` of ``fitted`` to ``device``.

    Dtypes are kept; attributes that are absent, None or not arrays stay.
    """
    for name in names:
        if isinstance(value := getattr(fitted, name, None), np.ndarray):
            setattr(fitted, name, to_device(value, xp, device))
    return fitted


def host_inputs(y, sample_weight):
    """``y`` and ``sample_weight`` on the host when they are array API arrays.

    A NumPy ``X`` under dispatch takes the NumPy path, and its labels and
    weights follow it there, as scikit-learn moves them to ``X``'s namespace
    (``n`` numbers each; documented). Without dispatch they are left to
    scikit-learn's usual ``np.asarray``.
    """
    if not dispatch_enabled():
        return y, sample_weight
    return tuple(a if _is_host(a) else to_numpy(a) for a in (y, sample_weight))


def host_weights(sample_weight, n_samples):
    """Return validated float64 host weights from any namespace (None: unit)."""
    from .validation import check_weights

    weights = sample_weight if _is_host(sample_weight) else to_numpy(sample_weight)
    return check_weights(weights, n_samples)


def supports_slice_assignment(xp, device):
    """Whether arrays of ``xp`` take ``a[rows, :] = block`` (torch, CuPy, strict).

    The array API standard leaves ``__setitem__`` optional (JAX arrays are
    immutable): where it is refused, callers keep their blocks and concatenate,
    at the cost of a second copy of the output.
    """
    probe = xp.zeros((2, 1), device=device)
    try:
        probe[0:1, :] = xp.ones((1, 1), device=device)
    except (TypeError, ValueError, NotImplementedError, AttributeError):
        return False
    return True


class RowBlockWriter:
    """Assemble an array from row blocks, in place where the namespace allows.

    Writes each block into one preallocated (or given) array, so that the
    result is the only full-size allocation; a namespace that refuses slice
    assignment gets the blocks concatenated at the end instead.

    Parameters
    ----------
    xp : namespace
    shape : tuple of int
        The result's shape; rows first.
    dtype : dtype of ``xp``
    device : device of ``xp``
    out : array, default=None
        Write into this array (same shape and dtype) instead of a new one:
        overwriting rows the caller owns and needs no more.
    """

    def __init__(self, xp, shape, dtype, device, out=None):
        self.xp = xp
        self.in_place = supports_slice_assignment(xp, device)
        self.blocks = []
        self.out = None
        if self.in_place:
            self.out = (
                xp.empty(shape, dtype=dtype, device=device) if out is None else out
            )

    def write(self, rows, block):
        """Set ``result[rows]`` to ``block`` (blocks in row order)."""
        if self.in_place:
            self.out[rows, ...] = block
        else:
            self.blocks.append(block)

    def write_columns(self, rows, parts):
        """Set ``result[rows]`` to the column groups ``parts``, left to right.

        ``parts`` may be a generator: in place, each group is written as it
        comes, so that only one group's temporary is alive at a time.
        """
        if not self.in_place:
            self.blocks.append(self.xp.concat(list(parts), axis=1))
            return
        start = 0
        for part in parts:
            stop = start + part.shape[1]
            self.out[rows, start:stop] = part
            start = stop

    def result(self):
        """Return the assembled array."""
        if self.in_place:
            return self.out
        if len(self.blocks) == 1:
            return self.blocks[0]
        return self.xp.concat(self.blocks, axis=0)
