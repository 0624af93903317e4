"""Row blocks: the temporaries of one block stay under one byte budget.

Feature maps, the centre selectors, the start's class sums and the open-set
distances all process ``X`` in blocks of rows, so that a float64 temporary
(a projection, a distance block, a centred copy) never holds all rows: tens of
MiB keep large inputs out of swap while leaving each GEMM big enough to be
efficient. One budget for all of them, here; tests shrink :data:`BLOCK_BYTES`
to exercise the blocking.
"""

from __future__ import annotations

#: Upper bound, in bytes, on the temporaries allocated per row block.
BLOCK_BYTES = 32 * 2**20


def rows_per_block(row_bytes: int, budget: int | None = None) -> int:
    """Return how many rows of ``row_bytes`` bytes fit ``budget`` (>= 1).

    ``budget`` defaults to :data:`BLOCK_BYTES` (read at call time, so that
    tests can shrink it).
    """
    budget = BLOCK_BYTES if budget is None else budget
    return max(1, int(budget // max(1, int(row_bytes))))
