"""Defaults for the attributes a model saved by an older sklmargin lacks.

A pickle (or a skops file) restores an estimator's ``__dict__`` as it was
saved; parameters and fitted attributes that came later are missing, and the
first method that reads one raises ``AttributeError`` (a kernel model saved
before ``compute_dtype_`` existed failed in ``predict_proba``).
:class:`LegacyStateMixin` fills them in ``__setstate__``, with the value that
makes the old model behave as the code that saved it did:

* a missing parameter takes its ``__init__`` default, unless the class names
  another in ``_legacy_params`` (a function of the saved state);
* a missing fitted attribute of a fitted model (one with ``classes_``) takes
  the value ``_legacy_fitted`` computes from the saved state.

An old model is recognised by its saved state alone: an attribute absent
from it is one that came later. The attributes each class fills are listed,
with what the saved state implies for them, at its ``_legacy_params`` /
``_legacy_fitted``. Saved states from before the Margin objects (those with
``_fit_loss`` instead of ``margin_``) are not translated.
"""

from __future__ import annotations

import inspect

#: What a ``_legacy_fitted`` function returns for a state that lacks what the
#: attribute is made from: a fit that failed after it set ``classes_`` (its
#: model was never fitted, so there is nothing to fill).
NOT_FITTED = object()


def fitted_dtype_name(state):
    """Name of the dtype a saved model was fitted in: its ``coef_``'s, or None.

    A kernel estimator saved without ``compute_dtype`` mapped and fitted in
    the dtype of its training rows, which ``coef_`` keeps (a kernel CV holds
    it in its refitted ``estimator_``).
    """
    coef = state.get("coef_")
    if coef is None and state.get("estimator_") is not None:
        coef = getattr(state["estimator_"], "coef_", None)
    dtype = getattr(coef, "dtype", None)
    return None if dtype is None else dtype.name


class LegacyStateMixin:
    """``__setstate__`` that fills attributes older versions did not save.

    Subclasses map each attribute added since their first released layout to
    a function of the saved state: ``_legacy_params`` for parameters (else
    the ``__init__`` default is used) and ``_legacy_fitted`` for fitted
    attributes.
    """

    _legacy_params: dict = {}
    _legacy_fitted: dict = {}

    def __setstate__(self, state):
        state = dict(state)
        defaults = inspect.signature(type(self).__init__).parameters
        for name in self._get_param_names():
            if name not in state:
                make = self._legacy_params.get(name)
                state[name] = defaults[name].default if make is None else make(state)
        if "classes_" in state:
            for name, make in self._legacy_fitted.items():
                if name not in state and (value := make(state)) is not NOT_FITTED:
                    state[name] = value
        super().__setstate__(state)
