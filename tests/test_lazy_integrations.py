"""The core imports no integration: Dask, ONNX and skops code loads on first use."""

import subprocess
import sys
import textwrap

INTEGRATIONS = (
    "dask",
    "distributed",
    "onnx",
    "onnxruntime",
    "skl2onnx",
    "skops",
)


def _modules_after(code):
    script = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import sys
        print(sorted(
            m for m in sys.modules
            if m in {INTEGRATIONS!r} or m.startswith("sklmargin.integrations")
        ))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1]


def test_a_numpy_fit_and_predict_load_no_integration():
    loaded = _modules_after(
        """
        import numpy as np
        import sklmargin
        X = np.random.RandomState(0).randn(80, 3)
        y = (X[:, 0] > 0).astype(int)
        for est in (
            sklmargin.MarginSoftmaxClassifier(),
            sklmargin.KernelMarginSoftmaxClassifier(n_components=20),
            sklmargin.KernelMarginSoftmaxClassifierCV(n_components=20, ss=[50.0]),
        ):
            est.fit(X, y).predict_proba(X)
        """
    )
    assert loaded == "[]"


def test_the_lazy_names_load_their_integration():
    loaded = _modules_after(
        """
        import sklmargin
        sklmargin.skops_trusted_types
        """
    )
    assert loaded == "['sklmargin.integrations', 'sklmargin.integrations.skops']"
