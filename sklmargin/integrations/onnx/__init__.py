"""ONNX export (skl2onnx and onnx are imported when a function is called)."""

from ._export import register_onnx_converters, to_onnx

__all__ = ["register_onnx_converters", "to_onnx"]
