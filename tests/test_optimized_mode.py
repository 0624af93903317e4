"""The package imports and fits under ``python -OO`` (docstrings stripped).

The shared parameter descriptions are filled into the classes' docstrings
at import; with ``-OO`` those are None, and the import used to fail there
(``AttributeError: 'NoneType' object has no attribute 'replace'``).
"""

import subprocess
import sys
import textwrap


def test_the_package_imports_and_fits_without_docstrings():
    script = textwrap.dedent(
        """
        import numpy as np
        import sklmargin
        assert sklmargin.MarginSoftmaxClassifier.__doc__ is None
        rng = np.random.RandomState(0)
        X = rng.randn(90, 3)
        y = np.argmax(X, axis=1)
        for est in (
            sklmargin.MarginSoftmaxClassifier(),
            sklmargin.KernelMarginSoftmaxClassifier(n_components=20),
            sklmargin.MarginSoftmaxClassifierCV(ss=[10.0, 30.0], cv=2),
        ):
            print(type(est).__name__, est.fit(X, y).score(X, y) > 0.8)
        """
    )
    out = subprocess.run(
        [sys.executable, "-OO", "-c", script], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split().count("True") == 3, out.stdout
