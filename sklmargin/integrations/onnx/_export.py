r"""ONNX export of the sklmargin estimators through skl2onnx (optional).

Nothing here imports ``skl2onnx`` or ``onnx`` at module level: they are
imported when :func:`register_onnx_converters` or :func:`to_onnx` is called,
so the core package never depends on them (``pip install ".[onnx]"`` from
a checkout).

The exported graph computes the same margin-free logits as
``decision_function`` (the margin is a training device only), then their
softmax and argmax:

.. math::

    z(x) = \begin{cases}
      \dfrac{\phi(x) A + a}{\max(\sqrt{|\phi(x)|^2 + c^2},\ \epsilon)} + b
        & \text{losses that normalise } x \text{ (NormFace, AM-Softmax, ArcFace)}\\[1ex]
      \phi(x) A + b & \text{the others (softmax, L-Softmax, A-Softmax)}
    \end{cases}

where :math:`\phi` is the identity or the kernel estimator's feature map
(applied after its learned input transform, ``x * t`` or ``x @ T``: one
``Mul`` or ``MatMul`` node),
:math:`A` the prototypes (transposed) with the logit scale folded in, per
class: ``s / |w_j|`` for the cosine losses, ``s`` for A-Softmax and 1 for
L-Softmax (whose ``|x|`` and ``|w_j|`` cancel against the cosine's norms),
:math:`a` the lifting feature's contribution ``c * constant_coef_`` scaled
alike, and
:math:`b` the intercepts. Every read of the estimators' fitted attributes is in
:func:`~sklmargin.objective._description._logit_description`, the one place to
change when they change.
"""

from __future__ import annotations

import numpy as np

from ...features._nystroem import NystroemDescription
from ...objective._description import (
    _logit_description,
    _map_description,
)

__all__ = ["register_onnx_converters", "to_onnx"]

_ALIAS_LINEAR = "SklmarginMarginSoftmaxClassifier"
_ALIAS_KERNEL = "SklmarginKernelMarginSoftmaxClassifier"
_ALIAS_FOURIER = "SklmarginRandomFourierFeatures"


# -- graph building ------------------------------------------------------------
class _Graph:
    """Thin helper over skl2onnx's scope and container: constants and nodes."""

    def __init__(self, scope, container, dtype, prefix):
        from onnx.helper import np_dtype_to_tensor_dtype

        self.scope = scope
        self.container = container
        self.dtype = np.dtype(dtype)
        self.prefix = prefix
        self._proto_type = np_dtype_to_tensor_dtype

    def const(self, name, value, dtype=None):
        value = np.asarray(value, dtype=self.dtype if dtype is None else dtype)
        unique = self.scope.get_unique_variable_name(f"{self.prefix}_{name}")
        if value.dtype.kind in "US":  # string labels
            from onnx import TensorProto

            content = [str(v).encode("utf-8") for v in value.ravel()]
            self.container.add_initializer(
                unique, TensorProto.STRING, list(value.shape), content
            )
        else:
            self.container.add_initializer(
                unique,
                self._proto_type(value.dtype),
                list(value.shape),
                value.ravel().tolist(),
            )
        return unique

    def node(self, op_type, inputs, output=None, **attrs):
        if output is None:
            output = self.scope.get_unique_variable_name(
                f"{self.prefix}_{op_type.lower()}"
            )
        self.container.add_node(
            op_type,
            list(inputs),
            [output],
            name=self.scope.get_unique_operator_name(f"{self.prefix}_{op_type}"),
            **attrs,
        )
        return output


def _input_dtype(variable):
    from skl2onnx.common.data_types import guess_numpy_type

    dtype = np.dtype(guess_numpy_type(variable.type))
    if dtype not in (np.float32, np.float64):
        raise NotImplementedError(
            f"ONNX export of sklmargin estimators takes float32 or float64 input; "
            f"got {dtype}."
        )
    return dtype


def _row_squares(graph, values, width):
    """``sum_j values[i, j]^2`` as an (n, 1) column, at any opset.

    ``(v * v) @ ones``: a MatMul is valid at every opset (ReduceSumSquare
    moved its axes to an input in opset 18).
    """
    squares = graph.node("Mul", [values, values])
    return graph.node("MatMul", [squares, graph.const("ones", np.ones((width, 1)))])


def _nystroem_graph(graph, nystroem, X):
    """Nodes of the Nyström features; returns the name of the result."""
    scaled = graph.node("Sub", [X, graph.const("offset", nystroem.offset)])
    scaled = graph.node("Mul", [scaled, graph.const("root", nystroem.root_gamma)])
    row_squares = _row_squares(graph, scaled, nystroem.offset.shape[0])
    cross = graph.node("MatMul", [scaled, graph.const("centres", nystroem.centres)])
    cross = graph.node("Mul", [cross, graph.const("minus_two", -2.0)])
    squared = graph.node("Add", [cross, row_squares])
    squared = graph.node(
        "Add", [squared, graph.const("centre_squares", nystroem.centre_squares)]
    )
    squared = graph.node("Max", [squared, graph.const("zero", 0.0)])
    kernel = graph.node("Exp", [graph.node("Neg", [squared])])
    return graph.node(
        "MatMul", [kernel, graph.const("normalization", nystroem.normalization)]
    )


def _map_graph(graph, fourier, X, output=None):
    """Nodes of the feature map ``z(x)`` (Nyström or random Fourier)."""
    if isinstance(fourier, NystroemDescription):
        return _nystroem_graph(graph, fourier, X)
    parts = []
    if fourier.pair_weights.shape[1]:
        pairs = graph.node(
            "MatMul", [X, graph.const("pair_weights", fourier.pair_weights)]
        )
        parts += [graph.node("Cos", [pairs]), graph.node("Sin", [pairs])]
    if fourier.odd_weights.shape[1]:
        odd = graph.node("MatMul", [X, graph.const("odd_weights", fourier.odd_weights)])
        odd = graph.node("Add", [odd, graph.const("odd_offset", fourier.odd_offset)])
        parts.append(graph.node("Cos", [odd]))
    joined = parts[0] if len(parts) == 1 else graph.node("Concat", parts, axis=1)
    return graph.node("Mul", [joined, graph.const("scale", fourier.scale)], output)


def _row_max(graph, values):
    """``max_j values[i, j]`` as an (n, 1) column, at any opset."""
    if graph.container.target_opset >= 18:  # axes became an input in opset 18
        axes = graph.const("axes", [1], dtype=np.int64)
        return graph.node("ReduceMax", [values, axes], keepdims=1)
    return graph.node("ReduceMax", [values], axes=[1], keepdims=1)


def _normalised_logits_graph(graph, description, features):
    r"""Nodes of ``([phi, c] . [A, a]) / max(|[phi, c]|, tiny)``, overflow-free.

    Squared raw rows overflow float32 beyond about 1e19 (and underflow below
    about 1e-19): the norm became inf (or 0) and the logits the bias alone
    (or huge). As :func:`sklmargin.objective._rows.row_norms` does, each row is first
    divided by its peak :math:`p = \max(\max_j |\phi_j|, c, \mathrm{tiny})`:
    the quotient is unchanged and every entry of :math:`[\phi, c] / p` lies in
    :math:`[-1, 1]`. Its norm is :math:`\ge 1` unless the peak is the ``tiny``
    floor, so the floor :math:`\max(|[\phi, c]|, \mathrm{tiny})` becomes
    :math:`\max(|[\phi, c]| / p, 1)`.
    """
    lift = description.lift
    peak = _row_max(graph, graph.node("Abs", [features]))
    peak = graph.node("Max", [peak, graph.const("floor", max(lift, description.tiny))])
    inverse = graph.node("Reciprocal", [peak])
    scaled = graph.node("Mul", [features, inverse])
    raw = graph.node("MatMul", [scaled, graph.const("matrix", description.matrix)])
    if np.any(description.inner_bias):
        inner = graph.node(
            "Mul", [inverse, graph.const("inner", description.inner_bias)]
        )
        raw = graph.node("Add", [raw, inner])
    sq_norm = _row_squares(graph, scaled, description.matrix.shape[0])  # |phi/p|^2
    if lift > 0:  # + (c / p)^2, with c / p <= 1
        lift_scaled = graph.node("Mul", [inverse, graph.const("lift", lift)])
        sq_norm = graph.node(
            "Add", [sq_norm, graph.node("Mul", [lift_scaled, lift_scaled])]
        )
    norm = graph.node("Max", [graph.node("Sqrt", [sq_norm]), graph.const("one", 1.0)])
    return graph.node("Div", [raw, norm])


def _logits_graph(graph, description, X):
    features = X
    transform = description.input_transform
    if transform is not None:  # the learned metric: x * t or x @ T
        op = "Mul" if transform.ndim == 1 else "MatMul"
        features = graph.node(op, [X, graph.const("input_transform", transform)])
    if description.feature_map is not None:
        features = _map_graph(graph, description.feature_map, features)
    if description.normalise:
        raw = _normalised_logits_graph(graph, description, features)
    else:
        raw = graph.node(
            "MatMul", [features, graph.const("matrix", description.matrix)]
        )
    return graph.node("Add", [raw, graph.const("bias", description.bias)])


def _class_labels(scope, estimator):
    """Return the labels the graph outputs (int64 or strings), as skl2onnx does."""
    from skl2onnx.common.utils_classifier import get_label_classes

    classes = np.asarray(get_label_classes(scope, estimator))
    if classes.dtype.kind in "US" or classes.dtype == object:
        return classes.astype(str), None
    if classes.dtype.kind == "f" and not np.all(classes == np.round(classes)):
        raise NotImplementedError(
            "ONNX export outputs integer or string labels; the classes "
            f"{classes.tolist()} are non-integral floats."
        )
    return classes.astype(np.int64), np.int64


def _convert_classifier(scope, operator, container):
    estimator = operator.raw_operator
    X = operator.inputs[0].full_name
    dtype = _input_dtype(operator.inputs[0])
    graph = _Graph(scope, container, dtype, "sklmargin")
    logits = _logits_graph(graph, _logit_description(estimator), X)
    classes, label_dtype = _class_labels(scope, estimator)
    index = graph.node("ArgMax", [logits], axis=1, keepdims=0)
    graph.node(
        "Gather",
        [graph.const("classes", classes, dtype=label_dtype or classes.dtype), index],
        operator.outputs[0].full_name,
        axis=0,
    )
    graph.node("Softmax", [logits], operator.outputs[1].full_name, axis=1)


def _convert_fourier(scope, operator, container):
    dtype = _input_dtype(operator.inputs[0])
    graph = _Graph(scope, container, dtype, "sklmargin_rff")
    fourier = _map_description(operator.raw_operator)
    _map_graph(
        graph, fourier, operator.inputs[0].full_name, operator.outputs[0].full_name
    )


def _classifier_shape(operator):
    """skl2onnx's classifier shapes, after sklearn's fitted check.

    skl2onnx calls the shape calculator before the converter, and its own one
    fails on an unfitted classifier with a RuntimeError about the number of
    classes; checking here gives the NotFittedError every sklearn user expects,
    also to callers of ``skl2onnx.to_onnx`` after registration.
    """
    from skl2onnx.common.shape_calculator import (
        calculate_linear_classifier_output_shapes,
    )
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(operator.raw_operator)
    calculate_linear_classifier_output_shapes(operator)


def _fourier_shape(operator):
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(operator.raw_operator)  # see _classifier_shape
    dtype = _input_dtype(operator.inputs[0])
    tensor_type = DoubleTensorType if dtype == np.float64 else FloatTensorType
    n_samples = operator.inputs[0].get_first_dimension()
    n_out = operator.raw_operator._n_features_out
    operator.outputs[0].type = tensor_type([n_samples, n_out])


def register_onnx_converters():
    """Register the sklmargin converters with skl2onnx.

    After this call ``skl2onnx.to_onnx`` / ``convert_sklearn`` convert
    :class:`MarginSoftmaxClassifier`, :class:`KernelMarginSoftmaxClassifier`
    (with ``kernel_approximation="orf"`` or ``"rff"``) and
    :class:`RandomFourierFeatures`, alone or inside a
    :class:`~sklearn.pipeline.Pipeline`. The classifiers produce skl2onnx's
    standard classifier outputs: ``label`` (int64 or string) and
    ``probabilities`` (the softmax of the margin-free logits, equal to
    ``predict_proba``), with the usual ``zipmap`` and ``nocl`` options.
    Registering twice is harmless.

    Raises
    ------
    ImportError
        If skl2onnx is not installed (``pip install ".[onnx]"`` from a checkout).
    """
    try:
        from skl2onnx import update_registered_converter
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "ONNX export needs skl2onnx and onnxruntime: pip install skl2onnx "
            "onnxruntime (or, in a sklmargin checkout, pip install '.[onnx]')."
        ) from error

    from ...estimators._kernel import KernelMarginSoftmaxClassifier
    from ...estimators._linear import MarginSoftmaxClassifier
    from ...features._fourier import RandomFourierFeatures

    classifier_options = {"zipmap": [True, False, "columns"], "nocl": [False, True]}
    for cls, alias in (
        (MarginSoftmaxClassifier, _ALIAS_LINEAR),
        (KernelMarginSoftmaxClassifier, _ALIAS_KERNEL),
    ):
        update_registered_converter(
            cls,
            alias,
            _classifier_shape,
            _convert_classifier,
            options=classifier_options,
        )
    update_registered_converter(
        RandomFourierFeatures, _ALIAS_FOURIER, _fourier_shape, _convert_fourier
    )


def to_onnx(estimator, X, *, zipmap=False, target_opset=None):
    """Convert a fitted estimator (or a pipeline holding ours) to ONNX.

    Registers the converters (:func:`register_onnx_converters`), then calls
    ``skl2onnx.to_onnx``. The input's dtype (float32 or float64) and width are
    taken from ``X``; the graph accepts any number of rows.

    Parameters
    ----------
    estimator : estimator or Pipeline
        Fitted; any skl2onnx-convertible pipeline whose steps include
        sklmargin estimators.
    X : array-like of shape (n_samples, n_features)
        A sample of the input (only its dtype and width are used).
    zipmap : bool or "columns", default=False
        skl2onnx's ``zipmap`` option for the classifiers: False gives the
        probabilities as one (n_samples, n_classes) tensor, True as a list of
        ``{label: probability}`` dictionaries.
    target_opset : int, default=None
        ONNX opset; None means the latest one skl2onnx supports.

    Returns
    -------
    onnx.ModelProto
        Outputs ``label`` and ``probabilities`` for a classifier,
        ``variable`` for :class:`RandomFourierFeatures`.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If ``estimator`` (or one of our estimators inside it) is not fitted.
    NotImplementedError
        For what the graph cannot compute exactly (see the message).

    Examples
    --------
    .. code-block:: python

        import onnxruntime as ort
        from sklmargin import to_onnx

        model = to_onnx(clf, X_train[:1].astype("float32"))
        session = ort.InferenceSession(model.SerializeToString())
        labels, proba = session.run(None, {"X": X_test.astype("float32")})
    """
    from sklearn.utils.validation import check_is_fitted

    register_onnx_converters()
    import skl2onnx

    # Before skl2onnx, whose shape calculators fail on unfitted estimators of
    # other libraries with their own errors (ours check it themselves).
    check_is_fitted(estimator)

    from ...estimators._base import BaseMarginSoftmax

    options = {cls: {"zipmap": zipmap} for cls in BaseMarginSoftmax.__subclasses__()}
    X = np.asarray(X)
    return skl2onnx.to_onnx(
        estimator, X[:1], options=options, target_opset=target_opset
    )
