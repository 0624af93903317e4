"""Optional integrations: Dask, ONNX, skops.

The core never imports this package; each integration is loaded on first use
(a Dask input, :func:`sklmargin.to_onnx`, :func:`sklmargin.skops_trusted_types`).
Nothing here is imported at package import time, so this file imports nothing.
"""
