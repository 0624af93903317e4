"""Where a Dask computation runs: the distributed client, if any, and sharing.

Kept apart from the estimators' Dask code so that the feature maps' Dask code
can share objects with the workers without importing the estimators' module.
"""

from __future__ import annotations


def _client():
    """Return the distributed Client ``dask.compute`` will use, or None."""
    from dask.base import get_scheduler

    client = getattr(get_scheduler(), "__self__", None)
    return client if hasattr(client, "scatter") else None


def share(obj):
    """One graph key for ``obj``: scattered to every worker under distributed."""
    import dask

    client = _client()
    if client is not None:
        return client.scatter(obj, broadcast=True, hash=False)
    return dask.delayed(obj, pure=False)
