"""Dask arrays: fit and predict in passes over the chunks (no import of Dask here).

Imported by the estimators only when the input is a Dask collection.
"""
