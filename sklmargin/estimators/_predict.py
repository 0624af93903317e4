r"""Predict, written once: every prediction is read from one pass of logits.

:class:`MarginPredictMixin` gives the margin-softmax classifiers and their
cross-validated variants ``decision_function``, ``predict``,
``predict_proba``, ``predict_log_proba`` and ``score_samples``. Each
validates ``X`` once and asks every model that
predicts for its margin-free logits of it, once (the estimator itself; a CV
estimator's refit model, or its fold models): the methods then differ only
in what they read from those logits,

* the decision: the logits (the models' mean), :math:`z_1 - z_0` for two
  classes; the labels: ``classes_`` at the largest logit;
* the probabilities: :math:`\mathrm{softmax}(z / T)`, :math:`T = 1` but for a
  CV estimator's fitted temperature;
* the open-set score: each model's
  (:func:`~sklmargin.openset._scores.open_set_score`), averaged over the
  models.

One pass can answer several of them: :class:`~sklmargin.OpenSetClassifier`
reads the labels and the score from one (``_labels_and_score``).

NumPy, SciPy sparse and array API rows (torch, CuPy, array-api-strict under
``array_api_dispatch``) run the same steps in their namespace. NumPy leaves
are left where they pay: the logits kernel and the softmax write in place
(their device twins are in :mod:`._device`), labels may be strings (looked
up on the host), and the score's log-sum-exp is SciPy's. A Dask ``X`` is
predicted chunk by chunk by these same methods
(:func:`sklmargin.integrations.dask._estimators.predict_dask`), as a lazy
Dask array.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils.array_api import (
    NUMPY,
    check_same_namespace,
    get_namespace,
    is_dask,
)
from .._utils.threads import blas_limited
from .._utils.validation import accepted_rows
from ..objective._cross_entropy import predicted_probabilities
from ..openset._scores import open_set_score
from ._device import device_labels, device_probabilities


class MarginPredictMixin:
    """The predictions of every margin-softmax classifier, from one logits pass.

    A class supplies ``_model_logits(X)`` on each model that
    predicts (the logits of validated rows in their namespace) and, to
    predict with several models or to calibrate, overrides
    :meth:`_predicting_models` and :meth:`_combined_logits`.
    """

    def _predicting_models(self):
        """Return the fitted models whose logits predict: the estimator itself."""
        return [self]

    @blas_limited  # the BLAS thread policy (sklmargin.set_blas_threads)
    def _fitted_logits(self, X, method):
        """``(X, xp, device, pairs)``: ``X`` validated once for ``method``.

        ``X`` must come from the namespace and the device the models were
        fitted on (the error names ``method``). ``pairs`` holds ``(model,
        logits)`` for each predicting model: its own margin-free logits of
        ``X``, in ``X``'s dtype and namespace.
        """
        check_is_fitted(self)
        models = self._predicting_models()
        xp, device = get_namespace(X, user_input=True)
        fitted = models[0].coef_  # NumPy after a NumPy fit, else on the fit's device
        if xp is not NUMPY or not isinstance(fitted, np.ndarray):
            name = f"{type(self).__name__}.{method}()"
            check_same_namespace(fitted, X, name, method, xp, device)
        X = validate_data(self, X, reset=False, **accepted_rows(xp))
        pairs = [(model, model._model_logits(X)) for model in models]
        return X, xp, device, pairs

    def _combined_logits(self, pairs, method, xp):
        """Return the logits ``method`` reads: here the one model's own."""
        return pairs[0][1]

    def _predicted(self, X, method):
        """``method(X)``, read from one pass of logits (Dask ``X``: by chunks)."""
        if is_dask(X):  # each chunk comes back here as NumPy rows, on a worker
            from ..integrations.dask._estimators import predict_dask

            return predict_dask(self, method, X)
        return self._read(method, *self._fitted_logits(X, method))

    def _read(self, method, X, xp, device, pairs):
        """``method``'s result, read from the models' logits ``pairs`` of ``X``."""
        if method == "score_samples":  # each model's score, averaged
            scores = [open_set_score(model, X, z) for model, z in pairs]
            if len(scores) == 1:
                return scores[0]
            return xp.mean(xp.stack(scores), axis=0)
        logits = self._combined_logits(pairs, method, xp)
        if method == "decision_function":
            return logits[:, 1] - logits[:, 0] if logits.shape[1] == 2 else logits
        if method == "predict":  # labels on X's device where they are numbers
            if xp is NUMPY:
                return self.classes_[np.argmax(logits, axis=1)]
            return device_labels(self.classes_, xp.argmax(logits, axis=1), xp, device)
        # Floored at the dtype's smallest positive number (NumPy: in place).
        if xp is NUMPY:
            proba = predicted_probabilities(logits)
        else:
            proba = device_probabilities(logits, xp)
        return proba if method == "predict_proba" else xp.log(proba)

    def _labels_and_score(self, X):
        """``(predict(X), score_samples(X))`` from one pass over ``X``.

        What :meth:`OpenSetClassifier.predict` needs (NumPy rows): the rows
        are validated once, and each model maps them to logits once.
        """
        one_pass = self._fitted_logits(X, "predict")
        return self._read("predict", *one_pass), self._read("score_samples", *one_pass)

    def decision_function(self, X):
        """Margin-free logits :math:`z(x)`; for two classes, :math:`z_1 - z_0` (1-D).

        A cross-validated estimator's are those of its refit model or, with
        ``refit=False``, the mean of its fold models' (a class a fold never
        saw gets that fold's smallest logit of the row).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Also a Dask array (the result is a lazy Dask array), or an array
            API array of the fit's namespace and device (under
            ``array_api_dispatch``).

        Returns
        -------
        array of shape (n_samples,) or (n_samples, n_classes)
            In ``X``'s namespace and on its device.
        """
        return self._predicted(X, "decision_function")

    def predict(self, X):
        """Class of the largest logit of :meth:`decision_function`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            As for :meth:`decision_function`.

        Returns
        -------
        array of shape (n_samples,)
            Values of ``classes_``; numeric labels in ``X``'s namespace and on
            its device (string labels stay NumPy).
        """
        return self._predicted(X, "predict")

    def predict_proba(self, X):
        r"""Probabilities :math:`\mathrm{softmax}(z / T)` of the margin-free logits.

        :math:`T = 1`, but for the cross-validated estimators: their
        ``temperature_``, fitted on the held-out logits (1 with
        ``calibrate=False``). Floored at the dtype's smallest positive number.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            As for :meth:`decision_function`.

        Returns
        -------
        array of shape (n_samples, n_classes)
            In ``X``'s namespace and on its device.
        """
        return self._predicted(X, "predict_proba")

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Taken as ``log(predict_proba)`` rather than a separate log-softmax so that
        both agree to the last bit in float32 at large ``s``. Probabilities are
        floored at the dtype's smallest positive number, so the logarithm is
        finite (at least -103.3 in float32, -744.4 in float64).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            As for :meth:`decision_function`.

        Returns
        -------
        array of shape (n_samples, n_classes)
            In ``X``'s namespace and on its device.
        """
        return self._predicted(X, "predict_log_proba")

    def score_samples(self, X):
        r"""Open-set score: higher means more typical of the known classes.

        .. math::

            -\gamma \min_c \lVert x - c \rVert^2
            + \log \max_j \operatorname{softmax}\big(z(x) / T\big)_j,
            \qquad T = \max(1, s / 30):

        the log-kernel to the nearest Nyström centre (0 without centres: the
        linear estimator, random Fourier maps) plus the log of the maximum
        probability (Hendrycks and Gimpel 2017) of the margin-free logits
        :math:`z(x)`. Chosen by measurement among the usual scores (module
        ``sklmargin.openset._scores``); :class:`OpenSetClassifier` thresholds
        it. A cross-validated estimator's is its refit model's or, with
        ``refit=False``, the mean of its fold models' scores.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            As for :meth:`decision_function`.

        Returns
        -------
        array of shape (n_samples,)
            In float64 (the widest float of ``X``'s device), at most 0; in
            ``X``'s namespace and on its device.
        """
        return self._predicted(X, "score_samples")
