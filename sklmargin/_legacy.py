"""The module paths of releases before the subpackages, kept importable.

A pickled (or skops-saved) model records each class by module and name, e.g.
``sklmargin._estimators.MarginSoftmaxClassifier`` or ``sklmargin._margins.AMSoftmax``
(a fitted estimator holds its loss object in ``margin_``). Those modules moved
into subpackages; a finder on :data:`sys.meta_path` answers each old name with
the module that now holds its classes, so old files load and predict as before
(``tests/test_legacy_pickles.py`` loads models saved by the flat layout). The
finder knows only the names below, imports nothing until one is asked for, and
adds no module of its own: ``sklmargin._kernel`` *is*
``sklmargin.estimators._kernel``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

#: Old module -> the module that holds its public and pickled names today.
LEGACY_MODULES = {
    "sklmargin._estimators": "sklmargin.estimators",
    "sklmargin._margins": "sklmargin.losses",
    "sklmargin._objective": "sklmargin.objective",
    "sklmargin._modifiers": "sklmargin.losses._support_vectors",
    "sklmargin._rows": "sklmargin.objective._rows",
    "sklmargin._cross_entropy": "sklmargin.objective._cross_entropy",
    "sklmargin._solver": "sklmargin.solver._lbfgs",
    "sklmargin._start": "sklmargin.solver._start",
    "sklmargin._features": "sklmargin.features._fourier",
    "sklmargin._nystroem": "sklmargin.features._nystroem",
    "sklmargin._centres": "sklmargin.features._centres",
    "sklmargin._kernel": "sklmargin.estimators._kernel",
    "sklmargin._openset": "sklmargin.openset._classifier",
    "sklmargin._openset_scores": "sklmargin.openset._scores",
    "sklmargin._cv": "sklmargin.model_selection._cv",
    "sklmargin._cv_base": "sklmargin.model_selection._cv_base",
    "sklmargin._cv_path": "sklmargin.model_selection._cv_path",
    "sklmargin._calibration": "sklmargin.model_selection._calibration",
    "sklmargin._dask": "sklmargin.integrations.dask._estimators",
    "sklmargin._dask_features": "sklmargin.integrations.dask._features",
    "sklmargin._dask_objective": "sklmargin.integrations.dask._objective",
    "sklmargin._onnx": "sklmargin.integrations.onnx._export",
    "sklmargin._onnx_description": "sklmargin.objective._description",
    "sklmargin._skops": "sklmargin.integrations.skops",
    "sklmargin._validation": "sklmargin._utils.validation",
    "sklmargin._compat": "sklmargin._utils.compat",
    "sklmargin._doc_link": "sklmargin._utils.doc_link",
}


class _LegacyModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import an old module name as the module that replaced it."""

    def __init__(self):
        self._own_specs = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in LEGACY_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        # The import system keeps the returned module's own __name__ and
        # files it under the old name as well, but sets its __spec__ to the
        # old name's: exec_module puts the module's own back.
        module = importlib.import_module(LEGACY_MODULES[spec.name])
        self._own_specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module):
        """Nothing to run: the module was imported under its own name.

        Only its ``__spec__`` is restored: left as the old name's, whose
        parent is not the module's package, every relative import run inside
        the module afterwards raised an ``ImportWarning``.
        """
        module.__spec__ = self._own_specs.pop(module.__name__)


def install_legacy_module_paths():
    """Put the finder on :data:`sys.meta_path` once (idempotent)."""
    if not any(isinstance(f, _LegacyModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_LegacyModuleFinder())


def legacy_names(qualified_name):
    """Return the names a class had under the flat layout (for skops' trust list).

    Parameters
    ----------
    qualified_name : str
        ``"module.Class"`` as the class is named today.

    Returns
    -------
    list of str
        Every ``"old_module.Class"`` whose old module now resolves to the
        class's module (empty for a class that did not move).
    """
    module, _, name = qualified_name.rpartition(".")
    # The class's own module, moved whole; and a split module, now a package
    # that answers for what it re-exports (SupportVectorGuided lived in
    # ``_margins`` before ``_modifiers``).
    return [
        f"{old}.{name}"
        for old, new in LEGACY_MODULES.items()
        if new == module
        or (
            module.startswith(new + ".")
            and name in getattr(importlib.import_module(new), "__all__", ())
        )
    ]
