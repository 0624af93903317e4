r"""The objective as a map-reduce over row chunks of a Dask array.

The training objective is a weighted mean over samples, so over row chunks
:math:`c` with weight totals :math:`S_c` (:math:`S = \sum_c S_c`) it splits as

.. math::

    F(V, b) = \sum_c \frac{S_c}{S}\, F_c(V, b)
    + \frac{1}{2 C S} \|V\|^2, \qquad
    \nabla F = \sum_c \frac{S_c}{S}\, \nabla F_c + \frac{V}{C S},

where :math:`F_c` is the weighted mean loss of chunk :math:`c` alone: exactly
:class:`~sklmargin.objective._linear.LinearMarginObjective` built on that chunk's
prepared rows, without penalty. Every evaluation sends the parameter vector to
the workers, runs one ``F_c`` per chunk there and sums the ``(value,
gradient)`` pairs in chunk order (groups of chunks on the workers, then the
group sums on the client: the same sums in the same order whatever the
scheduling, so a fit is reproducible); ``K x M`` floats per group come back
to the client, where L-BFGS runs. The penalty is added once, here.

Chunks are *prepared* (feature map, lift, unit rows) by :func:`prepare_chunk`
on the workers. They are either persisted there (the default when they fit in
the workers' memory: an evaluation is then only the two GEMMs per chunk) or
recomputed from ``X``'s chunks at every evaluation ("streaming": memory is one
chunk per worker, each evaluation pays the feature map again).

A margin with a non-target state (SV-Softmax) keeps its state per chunk on the
workers: :meth:`DaskMarginObjective.value_and_state` persists the chunks' masks
and returns a handle (:class:`ChunkStates`), never the (n, K) mask itself.

Nothing here imports Dask at module level:
:mod:`sklmargin.integrations.dask._estimators` calls in only for Dask input.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ...objective._interface import ParameterLayout
from ...objective._linear import LinearMarginObjective
from ...objective._rows import PreparedRows, prepare_rows, row_norms
from ...solver._start import weighted_class_sums

#: Chunks whose results one worker task sums before they go to the client.
GROUP = 16


@dataclass
class ChunkData:
    """One row chunk as the objective consumes it (lives on a worker).

    Attributes
    ----------
    rows : PreparedRows
    y : ndarray of shape (n_chunk,)
        Integer labels.
    sample_weight : ndarray of shape (n_chunk,)
        Effective weights (``class_weight`` included).
    """

    rows: PreparedRows
    y: np.ndarray
    sample_weight: np.ndarray


@dataclass(frozen=True)
class EvalSpec:
    """What an evaluation needs besides the parameters (sent once per graph)."""

    margin: object
    m: float
    s: float | None
    n_classes: int
    fit_intercept: bool
    lam: float
    sw_total: float


# -- functions that run on the workers ---------------------------------------
def prepare_chunk(X, y, sample_weight, mapper, normalize, constant):
    """Map, lift and normalise one chunk.

    As in memory: :func:`~sklmargin.objective._rows.prepare_rows`.
    """
    features = mapper(X)
    rows = prepare_rows(features, normalize=normalize, constant=constant)
    return ChunkData(rows, y, sample_weight)


def chunk_lift_statistics(X, sample_weight, mapper):
    """Largest feature-row norm ``p_c`` and ``sum_i w_i (|z_i| / p_c)^2``.

    Combined over chunks as ``sum_c q_c (p_c / p)^2`` with ``p = max_c p_c``:
    the weighted mean square of :func:`~sklmargin.objective._rows.lift_constant` without
    squaring a huge norm.
    """
    norms = row_norms(mapper(X))
    peak = float(np.max(norms, initial=0.0))
    if not peak > 0:
        return 0.0, 0.0
    return peak, float(sample_weight @ (norms / peak) ** 2)


def chunk_start_statistics(chunk, n_classes):
    """Weighted class sums of the chunk's rows, and its weight total."""
    sums = weighted_class_sums(chunk.rows.X, chunk.y, chunk.sample_weight, n_classes)
    return sums, float(chunk.sample_weight.sum())


def _chunk_objective(chunk, spec, margin=None):
    # C = inf: the chunk carries no penalty (l2_strength = 1 / (inf * S_c) = 0);
    # the client adds it once.
    objective = LinearMarginObjective(
        chunk.rows,
        chunk.y,
        spec.n_classes,
        chunk.sample_weight,
        spec.margin if margin is None else margin,
        spec.m,
        spec.s,
        np.inf,
        spec.fit_intercept,
    )
    return objective


def chunk_loss_gradient(chunk, spec, params, state):
    """``(S_c / S) F_c`` and its gradient, the state held fixed if given."""
    objective = _chunk_objective(chunk, spec)
    value, grad = objective.loss_gradient(params, lam=spec.lam, state=state)
    fraction = objective.sw_sum / spec.sw_total
    grad *= fraction
    return value * fraction, grad


def chunk_value_and_state(chunk, spec, params):
    """``(S_c / S) F_c`` (exact, state recomputed) and the chunk's state."""
    objective = _chunk_objective(chunk, spec)
    value, state = objective.value_and_state(params, lam=spec.lam)
    return value * (objective.sw_sum / spec.sw_total), state


def _with_state(chunk, spec, params, result):
    return chunk_loss_gradient(chunk, spec, params, result[1])


def sum_in_order(*parts):
    """Sum results left to right (values, or (value, gradient) pairs)."""
    total = parts[0]
    for part in parts[1:]:
        if isinstance(total, tuple):
            total = tuple(map(operator.add, total, part))
        else:
            total = total + part
    return total


def _results_equal(a, b):
    return _states_equal(a[1], b[1])


def _states_equal(a, b):
    if isinstance(a, tuple):
        return isinstance(b, tuple) and all(map(_states_equal, a, b))
    return bool(np.array_equal(a, b))


# -- client side ---------------------------------------------------------------
def _holders(nodes):
    """Workers holding each persisted node; None where unknown or not distributed.

    A persisted chunk must be evaluated where it lies: left free, the
    scheduler's work stealing moved 50 MB chunks between workers (measured:
    0.9 s of transfer in a 1.6 s evaluation of 8 chunks).
    """
    from dask.base import get_scheduler

    client = getattr(get_scheduler(), "__self__", None)
    if not hasattr(client, "who_has"):
        return [None] * len(nodes)
    # who_has finds the futures inside persisted collections (not bare keys).
    who_has = client.who_has(list(nodes))
    return [list(who_has.get(getattr(node, "key", None), ())) or None for node in nodes]


def map_chunks(func, nodes, *args, extra=None):
    """``func(node, *args[, extra[i]])`` per node, pinned to the node's worker."""
    import dask

    task = dask.delayed(func, pure=False)
    extra = [()] * len(nodes) if extra is None else [(e,) for e in extra]
    calls = []
    for node, holders, more in zip(nodes, _holders(nodes), extra, strict=True):
        if holders is None:
            calls.append(task(node, *args, *more))
        else:
            with dask.annotate(workers=holders, allow_other_workers=False):
                calls.append(task(node, *args, *more))
    return calls


def ordered_sum(parts):
    """Sum delayed results in chunk order, whatever the scheduling.

    Groups of :data:`GROUP` chunks are summed on the workers (one task each:
    per-task overhead, not arithmetic, is what costs here) and the group sums
    on the client, both left to right, so a fit is reproducible.
    """
    import dask

    task = dask.delayed(sum_in_order, pure=False)
    groups = [task(*parts[i : i + GROUP]) for i in range(0, len(parts), GROUP)]
    return sum_in_order(*dask.compute(*groups))


class ChunkStates:
    """Handle on per-chunk non-target states persisted on the workers.

    :func:`sklmargin.solver._lbfgs.state_rounds` compares two states with
    ``np.array_equal``; for this object that calls :meth:`__eq__`, which
    compares the chunks' masks on the workers and brings back one boolean.
    """

    def __init__(self, results):
        # Persisted (value, state) pairs, one per chunk, on the chunk's worker.
        self.results = results

    def __eq__(self, other):
        if not isinstance(other, ChunkStates):
            return NotImplemented
        if len(self.results) != len(other.results):
            return False
        import dask

        verdicts = map_chunks(_results_equal, self.results, extra=other.results)
        return all(dask.compute(*verdicts))

    __hash__ = None


class DaskMarginObjective:
    r"""The training objective over Dask chunks (a :class:`MarginObjective`).

    Evaluates the objective of the module docstring: one
    :func:`chunk_loss_gradient` per chunk on the workers, an ordered sum, the
    L2 penalty on the client. It implements
    :class:`~sklmargin.objective.MarginObjective`, the interface
    :func:`~sklmargin.solver.fit_continuation`, the start and the estimator's
    ``_store_solution`` use, with the in-memory objective's
    :class:`~sklmargin.objective._interface.ParameterLayout`.

    Parameters
    ----------
    chunks : list of dask.delayed.Delayed
        One :class:`ChunkData` per chunk with positive weight (persisted or lazy).
    sw_total : float
        :math:`S`, the sum of the chunks' weight totals.
    n_features : int
        Columns of the prepared rows (lift included).
    constant : float
        The lift ``c``.
    n_classes : int
    margin : Margin or SupportVectorGuided
    m, s, C : float
    fit_intercept : bool
    dtype : numpy dtype, default=np.float64
        The data's dtype (that of the fitted attributes).
    """

    def __init__(
        self,
        chunks,
        sw_total,
        n_features,
        constant,
        n_classes,
        margin,
        m,
        s,
        C,
        fit_intercept,
        dtype=np.float64,
    ):
        self.chunks = chunks
        self.dtype = np.dtype(dtype)
        self.sw_total = float(sw_total)
        self.n_features = n_features
        self.constant = float(constant)
        self.n_classes = n_classes
        self.layout = ParameterLayout(n_classes, n_features, fit_intercept)
        self.margin = margin
        self.m, self.s, self.C = m, s, C
        self.fit_intercept = fit_intercept
        self.l2_strength = 1.0 / (C * self.sw_total) if margin.penalized else 0.0
        #: Evaluations sent to the workers (for the benchmark's per-eval time).
        self.n_evaluations = 0

    def with_margin(self, margin):
        """Return the same problem (same persisted chunks) under another margin."""
        return DaskMarginObjective(
            self.chunks,
            self.sw_total,
            self.n_features,
            self.constant,
            self.n_classes,
            margin,
            self.m,
            self.s,
            self.C,
            self.fit_intercept,
            self.dtype,
        )

    @property
    def n_params(self):
        """Length of the flat parameter vector (:class:`ParameterLayout`)."""
        return self.layout.n_params

    def unpack(self, params):
        """Split the flat vector into ``(V, b)`` views (``b`` None w/o intercept)."""
        return self.layout.unpack(params)

    def penalty(self, params):
        """Return the L2 term, added once on the client."""
        return self.layout.penalty(params, self.l2_strength)

    def stationarity(self, params, grad):
        """Largest gradient entry on the parameters' own scale."""
        return self.layout.stationarity(params, grad, self.margin.normalizes_W)

    def _graph_inputs(self, params, lam):
        import dask

        spec = EvalSpec(
            self.margin,
            self.m,
            self.s,
            self.n_classes,
            self.fit_intercept,
            float(lam),
            self.sw_total,
        )
        # One key each: the vector goes to the scheduler once per evaluation,
        # not once per chunk task.
        return dask.delayed(spec, pure=False), dask.delayed(
            np.array(params, dtype=np.float64), pure=False
        )

    def loss_gradient(self, params, *, lam=0.0, state=None):
        """Objective value and gradient (float64): one map-reduce on the workers.

        ``state``, if given, is the :class:`ChunkStates` handle of
        :meth:`value_and_state`: each chunk's state stays on its worker.
        """
        spec, params_node = self._graph_inputs(params, lam)
        if state is None:
            parts = map_chunks(
                chunk_loss_gradient, self.chunks, spec, params_node, None
            )
        else:  # the state was computed on the chunk's worker: it is there
            parts = map_chunks(
                _with_state, self.chunks, spec, params_node, extra=state.results
            )
        value, grad = ordered_sum(parts)
        self.n_evaluations += 1
        grad = np.array(grad, dtype=np.float64)
        value = float(value)
        if self.l2_strength:
            coef, _ = self.unpack(params)
            grad_coef, _ = self.unpack(grad)
            value += self.penalty(params)
            grad_coef += self.l2_strength * coef
        return value, grad

    def value_and_state(self, params, *, lam=0.0):
        """Exact objective and a :class:`ChunkStates` handle (states stay remote)."""
        import dask

        spec, params_node = self._graph_inputs(params, lam)
        results = dask.persist(
            *map_chunks(chunk_value_and_state, self.chunks, spec, params_node)
        )
        value = ordered_sum(map_chunks(operator.getitem, results, 0))
        self.n_evaluations += 1
        return float(value) + self.penalty(params), ChunkStates(results)
