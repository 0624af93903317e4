r"""Experiment: learn the scale ``s`` with the weights instead of cross-validating it.

NormFace (Wang et al. 2017, arXiv:1704.06369, section 3.3) learns the scale as
one more parameter. Here ``s`` joins the L-BFGS variables of AM-Softmax with a
floor (an L-BFGS-B bound, ``s >= s_floor``) and a ridge penalty:

.. math::

    \min_{V, b,\ s \ge s_{\min}}\; F(V, b; s) + \frac{\alpha}{2} s^2,
    \qquad
    \frac{\partial F}{\partial s} = \sum_{ij} \frac{\partial F}{\partial z_{ij}}
        \, h_{ij}

where ``h`` is the margin-adjusted cosine (the logit is ``z = s h + b``); the
entrywise ``dF/ds`` comes from
``pointwise_loss_gradient(..., return_scale_grad=True)``. The objective wraps
:class:`sklmargin._objective.LinearMarginObjective` (subclassed here, not
edited). On training data that is not separable the unpenalised optimum in
``s`` is finite (the training log loss is minimised at a finite temperature);
with a margin it is pushed up, the penalty keeps it bounded when the training
set is separable.

The question: does one such fit match the cross-validated s path
(``MarginSoftmaxClassifierCV()``) on test accuracy at less cost? The script
fits both on the same standardised training split, BLAS pinned to one thread,
and prints test accuracy, log loss and CPU seconds.

Usage::

    python benchmarks/studies/learnable_scale.py [--data ../shared/data]
        [--datasets vowel,segment] [--alpha 1e-4] [--floors 1,30,60]
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.optimize import minimize  # noqa: E402
from sklearn.metrics import log_loss  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.extmath import softmax  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from sklmargin import MarginSoftmaxClassifierCV, get_margin
from sklmargin.objective._linear import LinearMarginObjective
from sklmargin.objective._pointwise import pointwise_loss_gradient
from sklmargin.objective._rows import prepare_rows, row_norms

REPO = Path(__file__).resolve().parents[2]


class LearnableScaleObjective(LinearMarginObjective):
    """``LinearMarginObjective`` with ``s`` appended to the parameter vector."""

    def __init__(self, *args, alpha=0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.alpha = alpha

    @property
    def n_params(self):
        """Prototypes, biases and the scale."""
        return super().n_params + 1

    def loss_gradient(self, params):
        """Objective and gradient; the last entry is ``s``."""
        base, s = params[:-1], float(params[-1])
        self.s = s
        coef, intercept = self.unpack(base)
        cos, scale, w_hat, w_norm = self._forward(base)
        loss, grad_cos, grad_b, grad_scale, _ = pointwise_loss_gradient(
            cos,
            self.y,
            self.margin,
            self.m,
            scale,
            intercept=intercept,
            sample_weight=self.sw,
            return_scale_grad=True,
        )
        grad = np.empty_like(params)
        grad_coef, grad_intercept = self.unpack(grad[:-1])
        g = (grad_cos.T @ self.X).astype(np.float64, copy=False)
        radial = np.einsum("ij,ij->i", g, w_hat)
        g -= radial[:, None] * w_hat
        g /= w_norm[:, None]
        grad_coef[:] = g
        if grad_intercept is not None:
            grad_intercept[:] = grad_b
        grad[-1] = float(grad_scale.sum()) + self.alpha * s
        return loss + 0.5 * self.alpha * s**2, grad


def lift(X, constant):
    """``[x, c] / |[x, c]|`` row by row, as the estimator's constant feature."""
    lifted = np.hstack([X, np.full((X.shape[0], 1), constant)])
    return lifted / np.linalg.norm(lifted, axis=1, keepdims=True)


def fit_learnable(X, y, *, m=0.05, s0=30.0, floor=10.0, alpha=1e-4, tol=1e-4):
    """Fit AM-Softmax with ``s`` learned; returns a predict-logits function."""
    classes, y_enc = np.unique(y, return_inverse=True)
    n_classes = len(classes)
    constant = float(np.sqrt(np.mean(row_norms(X) ** 2) / X.shape[1]))
    objective = LearnableScaleObjective(
        prepare_rows(X, normalize=True, constant=constant),
        y_enc,
        n_classes,
        np.ones(X.shape[0]),
        get_margin("am-softmax"),
        m,
        s0,
        1.0,
        True,
        alpha=alpha,
    )
    # Start as the estimator does: class means of the lifted rows, log priors.
    x0 = np.zeros(objective.n_params)
    coef, intercept = objective.unpack(x0[:-1])
    means = np.array([objective.X[y_enc == k].mean(axis=0) for k in range(n_classes)])
    coef[:] = means / np.linalg.norm(means, axis=1, keepdims=True)
    priors = np.log(np.bincount(y_enc) / len(y_enc))
    intercept[:] = priors - priors.mean()
    x0[-1] = s0
    bounds = [(None, None)] * (objective.n_params - 1) + [(floor, None)]
    result = minimize(
        objective.loss_gradient,
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 2000, "gtol": tol * s0, "maxls": 50},
    )
    params = result.x
    coef, intercept = objective.unpack(params[:-1])
    w_hat = coef / np.linalg.norm(coef, axis=1, keepdims=True)
    s = float(params[-1])

    def logits(X_new):
        return s * (lift(X_new, constant) @ w_hat.T) + intercept

    return logits, classes, s, result.nit


def check_gradient():
    """Central differences of the s gradient on a small random problem."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((40, 5)), rng.integers(0, 3, 40)
    objective = LearnableScaleObjective(
        prepare_rows(X, normalize=True, constant=1.0),
        y,
        3,
        np.ones(40),
        get_margin("am-softmax"),
        0.1,
        10.0,
        1.0,
        True,
        alpha=1e-3,
    )
    params = rng.standard_normal(objective.n_params)
    params[-1] = 12.0
    _, grad = objective.loss_gradient(params)
    h = 1e-5
    up, down = params.copy(), params.copy()
    up[-1] += h
    down[-1] -= h
    numeric = (objective.loss_gradient(up)[0] - objective.loss_gradient(down)[0]) / (
        2 * h
    )
    assert abs(numeric - grad[-1]) < 1e-6 * max(1.0, abs(numeric)), (numeric, grad)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--floors", default="1,30,60")
    args = parser.parse_args()
    check_gradient()
    paths = sorted(Path(args.data).glob("*.npz"))
    if args.datasets:
        paths = [p for p in paths if p.stem in set(args.datasets.split(","))]
    floors = [float(f) for f in args.floors.split(",")]
    print(
        f"BLAS 1 thread; AM-Softmax m=0.05; learnable s with floors {floors}, "
        f"alpha {args.alpha}; CV: MarginSoftmaxClassifierCV() defaults (5 folds)"
    )
    print(
        "| dataset | floor | acc learned s | acc CV | s learned | s CV | "
        "CPU s learned | CPU s CV | log loss learned | log loss CV |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    with threadpool_limits(1):
        for path in paths:
            data = np.load(path)
            scaler = StandardScaler().fit(data["X_train"])
            X_train = scaler.transform(data["X_train"])
            X_test = scaler.transform(data["X_test"])
            y_train, y_test = data["y_train"], data["y_test"]

            start = time.process_time()
            cv = MarginSoftmaxClassifierCV().fit(X_train, y_train)
            cpu_cv = time.process_time() - start
            acc_cv = cv.score(X_test, y_test)
            loss_cv = log_loss(y_test, cv.predict_proba(X_test), labels=cv.classes_)
            for floor in floors:
                start = time.process_time()
                logits, classes, s, _ = fit_learnable(
                    X_train, y_train, floor=floor, alpha=args.alpha
                )
                cpu_learned = time.process_time() - start
                z = logits(X_test)
                acc_learned = float(np.mean(classes[z.argmax(axis=1)] == y_test))
                loss_learned = log_loss(y_test, softmax(z), labels=classes)
                print(
                    f"| {path.stem} | {floor:g} | {acc_learned:.4f} | {acc_cv:.4f} | "
                    f"{s:.1f} | {cv.s_:.1f} | {cpu_learned:.2f} | {cpu_cv:.2f} | "
                    f"{loss_learned:.4f} | {loss_cv:.4f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
