r"""The objective as a reduction over row chunks of a Dask array.

The training objective is a weighted mean over samples, so over row chunks
:math:`c` with weight totals :math:`S_c` (:math:`S = \sum_c S_c`) it splits as

.. math::

    F(V, b) = \sum_c \frac{S_c}{S}\, F_c(V, b)
    + \frac{1}{2 C S} \|V\|^2, \qquad
    \nabla F = \sum_c \frac{S_c}{S}\, \nabla F_c + \frac{V}{C S},

where :math:`F_c` is the weighted mean loss of chunk :math:`c` alone: exactly
the in-memory :class:`~sklmargin.objective.LinearMarginObjective` built on that
chunk's prepared rows, without penalty (its forward GEMM, margin, backward GEMM
and radial projection, which is linear in the gradient, so projecting per
chunk and summing is projecting the sum). Every evaluation sends the parameter
vector to the workers, runs one ``F_c`` per chunk there and sums the ``(value,
gradient)`` pairs in chunk order (groups of chunks on the workers, then the
group sums on the client: the same sums in the same order whatever the
scheduling, so a fit is reproducible); ``K x M`` floats per group come back
to the client, where L-BFGS runs. The L2 penalty is added once there, by the
objectives' shared :class:`~sklmargin.objective._interface.ObjectiveBase`.
The start's bias-only problem is each chunk's in-memory one (its float64
cosines): persisted chunks whose cosines fit beside them keep it on their
worker (one pass, then ``O(n_c K)`` a step), others recompute it at each step
(:meth:`DaskMarginObjective.intercept_problem`).

Chunks are *prepared* (feature map, lift, unit rows) by :func:`prepare_chunk`
on the workers, with the in-memory row preparation and statistics
(:mod:`sklmargin.objective._rows`, the start's class sums). They are either
persisted there (the default when they fit in the workers' memory: an
evaluation is then only the two GEMMs per chunk) or recomputed from ``X``'s
chunks at every evaluation ("streaming": memory is one chunk per worker, each
evaluation pays the feature map again).

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

from ...objective._interface import ObjectiveBase
from ...objective._linear import LinearMarginObjective
from ...objective._rows import PreparedRows, lift_statistics, prepare_rows, row_norms
from ...solver._start import weighted_class_sums
from ._cluster import _client

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


# -- functions that run on the workers ---------------------------------------
def prepare_chunk(X, y, sample_weight, mapper, normalize, constant):
    """Map, lift and normalise one chunk, as in memory (``prepare_rows``)."""
    rows = prepare_rows(mapper(X), normalize=normalize, constant=constant)
    return ChunkData(rows, y, sample_weight)


def chunk_lift_statistics(X, sample_weight, mapper):
    """Return :func:`~sklmargin.objective._rows.lift_statistics` of one chunk."""
    return lift_statistics(row_norms(mapper(X)), sample_weight)


def chunk_class_sums(chunk, n_classes):
    """Return the start's weighted class sums of the chunk's rows (as in memory)."""
    return weighted_class_sums(chunk.rows.X, chunk.y, chunk.sample_weight, n_classes)


def chunk_largest_norm(chunk):
    """Return the largest lifted row norm of the chunk (the scale check's)."""
    return float(np.max(chunk.rows.norms, initial=0.0))


def _chunk_objective(chunk, spec):
    """Return the chunk's in-memory objective (no penalty) and its ``S_c / S``."""
    margin, m, s, n_classes, fit_intercept, _, sw_total = spec
    # C = inf: the chunk carries no penalty; the client adds it once.
    objective = LinearMarginObjective(
        chunk.rows, chunk.y, n_classes, chunk.sample_weight, margin, m, s,
        np.inf, fit_intercept,
    )  # fmt: skip
    return objective, objective.sw_sum / sw_total


def chunk_evaluation(chunk, spec, params, state=None, with_gradient=True):
    """``(S_c / S) F_c`` and its gradient, or (``with_gradient=False``) state.

    The gradient holds ``state`` fixed if given; the state is recomputed.
    ``spec`` is ``(margin, m, s, n_classes, fit_intercept, lam, S)``.
    """
    objective, fraction = _chunk_objective(chunk, spec)
    lam = spec[5]
    if not with_gradient:
        value, state = objective.value_and_state(params, lam=lam)
        return value * fraction, state
    value, grad = objective.loss_gradient(params, lam=lam, state=state)
    grad *= fraction
    return value * fraction, grad


@dataclass
class ChunkIntercept:
    """One chunk's bias-only problem (kept between steps, or built for one).

    Attributes
    ----------
    function : callable
        The in-memory ``f_c(b) -> (value, gradient)`` on the chunk's float64
        cosines (:meth:`LinearMarginObjective.intercept_problem`).
    fraction : float
        The chunk's share ``S_c / S``.
    nbytes : int
        About the memory it keeps (cosines, labels, weights): its ``sizeof``
        for Dask's memory accounting, which cannot see into ``function``.
    """

    function: object
    fraction: float
    nbytes: int = 0

    def __call__(self, intercept):
        """Return ``(S_c / S) f_c(b)`` and its gradient over the bias."""
        value, grad = self.function(intercept)
        return value * self.fraction, np.asarray(grad) * self.fraction

    def __sizeof__(self):
        return object.__sizeof__(self) + self.nbytes


def chunk_intercept_problem(chunk, spec, params):
    """Return the chunk's :class:`ChunkIntercept` (one forward GEMM)."""
    objective, fraction = _chunk_objective(chunk, spec)
    function = objective.intercept_problem(params)
    # Its steps read only the cosines, labels and weights: the problem does
    # not hold the chunk's rows.
    objective.rows = objective.X = objective.norms = None
    kept = len(chunk.y) * spec[3] * 8 + chunk.y.nbytes + chunk.sample_weight.nbytes
    return ChunkIntercept(function, fraction, kept)


def chunk_intercept_step(chunk, spec, params, intercept):
    """One step of the chunk's bias-only problem, its cosines computed afresh.

    The same float64 cosines as :func:`chunk_intercept_problem`'s, so the
    same step; nothing is kept (streamed chunks).
    """
    return chunk_intercept_problem(chunk, spec, params)(intercept)


def _with_state(chunk, spec, params, result):
    return chunk_evaluation(chunk, spec, params, result[1])


def _exact(chunk, spec, params):
    return chunk_evaluation(chunk, spec, params, with_gradient=False)


def sum_in_order(*parts):
    """Sum results left to right (values, or (value, gradient) pairs)."""
    total = parts[0]
    for part in parts[1:]:
        if isinstance(total, tuple):
            total = tuple(map(operator.add, total, part))
        else:
            total = total + part
    return total


def _same_state(a, b):
    return bool(np.array_equal(a[1], b[1]))


# -- client side ---------------------------------------------------------------
def _holders(nodes):
    """Workers holding each persisted node; None where unknown or not distributed.

    A persisted chunk must be evaluated where it lies: left free, the
    scheduler's work stealing moved 50 MB chunks between workers (measured:
    0.9 s of transfer in a 1.6 s evaluation of 8 chunks).
    """
    client = _client()
    if client is None:
        return [None] * len(nodes)
    # who_has finds the futures inside persisted collections (not bare keys).
    who_has = client.who_has(list(nodes))
    return [list(who_has.get(getattr(node, "key", None), ())) or None for node in nodes]


def persist_here(nodes):
    """Persist ``nodes`` and, under distributed, wait until they exist.

    Then :func:`_holders` knows where each lies and the next tasks on them
    are pinned there (right after ``dask.persist`` it knows none: the first
    tasks went anywhere, and results were copied between workers).
    """
    import dask

    nodes = dask.persist(*nodes)
    if _client() is not None:
        from distributed import futures_of, wait

        wait(futures_of(nodes))
    return nodes


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

        verdicts = map_chunks(_same_state, self.results, extra=other.results)
        return all(dask.compute(*verdicts))

    __hash__ = None


class DaskMarginObjective(ObjectiveBase):
    r"""The training objective over Dask chunks (a :class:`MarginObjective`).

    Evaluates the objective of the module docstring: one
    :func:`chunk_evaluation` per chunk on the workers, an ordered sum, the L2
    penalty on the client. It implements
    :class:`~sklmargin.objective.MarginObjective`, the interface
    :func:`~sklmargin.solver.fit_continuation`, the start and the estimator's
    ``_store_solution`` use.

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
    keep_cosines : bool, default=True
        Whether the start's bias-only problem keeps each chunk's float64
        cosines (``n_classes x 8`` bytes a row) on its worker: for persisted
        chunks whose cosines fit beside them. If not (streamed chunks, or
        cosines too large), each step computes them afresh.
    """

    def __init__(
        self, chunks, sw_total, n_features, constant, n_classes, margin, m, s, C,
        fit_intercept, dtype=np.float64, keep_cosines=True,
    ):  # fmt: skip
        self._setup(margin, m, s, C, n_classes, n_features, fit_intercept, sw_total)
        self.chunks, self.constant, self.dtype = (
            chunks,
            float(constant),
            np.dtype(dtype),
        )
        self.keep_cosines = bool(keep_cosines)

    def with_margin(self, margin):
        """Return the same problem (same persisted chunks) under another margin."""
        return DaskMarginObjective(
            self.chunks, self.sw_sum, self.n_features, self.constant, self.n_classes,
            margin, self.m, self.s, self.C, self.fit_intercept, self.dtype,
            self.keep_cosines,
        )  # fmt: skip

    def _graph_inputs(self, params, lam, evaluation=True):
        import dask

        spec = (self.margin, self.m, self.s, self.n_classes, self.fit_intercept)
        spec += (float(lam), self.sw_sum)
        # The start's bias problem is no full evaluation (none in memory).
        self.n_evaluations += evaluation
        # One key each: the vector goes to the scheduler once per evaluation,
        # not once per chunk task.
        params = np.array(params, dtype=np.float64)
        return dask.delayed(spec, pure=False), dask.delayed(params, pure=False)

    def loss_gradient(self, params, *, lam=0.0, state=None):
        """Objective value and gradient (float64): one map-reduce on the workers.

        ``state``, if given, is the :class:`ChunkStates` handle of
        :meth:`value_and_state`: each chunk's state stays on its worker.
        """
        inputs = self._graph_inputs(params, lam)
        if state is None:
            parts = map_chunks(chunk_evaluation, self.chunks, *inputs)
        else:  # the state was computed on the chunk's worker: it is there
            parts = map_chunks(_with_state, self.chunks, *inputs, extra=state.results)
        value, grad = ordered_sum(parts)
        return self._penalised(params, float(value), np.array(grad, dtype=np.float64))

    def value_and_state(self, params, *, lam=0.0):
        """Exact objective and a :class:`ChunkStates` handle (states stay remote)."""
        inputs = self._graph_inputs(params, lam)
        results = persist_here(map_chunks(_exact, self.chunks, *inputs))
        value = ordered_sum(map_chunks(operator.getitem, results, 0))
        return float(value) + self.penalty(params), ChunkStates(results)

    def intercept_problem(self, params):
        """``f(b) -> (value, gradient over b)``: per chunk, the in-memory one.

        Each chunk's in-memory bias-only problem
        (:meth:`LinearMarginObjective.intercept_problem`: one forward GEMM,
        its cosines in float64), the chunks' shares summed in chunk order: the
        in-memory start. With ``keep_cosines`` each chunk's problem (``n_c x
        K`` cosines) stays on its worker: one pass, then ``O(n_c K)`` per
        step. Otherwise (streamed chunks, or cosines too large) nothing is
        kept: each step computes the cosines afresh (a forward GEMM per chunk
        per step, the same cosines, so the same steps). Through full
        evaluations instead, float32 steps stopped on the objective's
        round-off, away from the in-memory start.
        """
        import dask

        spec, params_node = self._graph_inputs(params, 0.0, evaluation=False)
        penalty = self.penalty(params)
        if self.keep_cosines:
            problems = persist_here(
                map_chunks(chunk_intercept_problem, self.chunks, spec, params_node)
            )

        def on_chunk_cosines(intercept):
            intercept = dask.delayed(np.array(intercept, dtype=np.float64), pure=False)
            if self.keep_cosines:
                steps = map_chunks(ChunkIntercept.__call__, problems, intercept)
            else:
                steps = map_chunks(
                    chunk_intercept_step, self.chunks, spec, params_node, intercept
                )
            value, grad = ordered_sum(steps)
            return float(value) + penalty, np.array(grad, dtype=np.float64)

        return on_chunk_cosines
