r"""
A linear probe on frozen embeddings: what s and C mean on unit rows
===================================================================

Features from a pretrained encoder (CLIP, DINO, a sentence encoder) are
usually classified by a linear model on their rows, the "linear probe", and
those rows are usually unit vectors. On unit rows a cosine loss is the
natural head: :class:`~sklmargin.MarginSoftmaxClassifier` compares each row
with one prototype direction per class, and its scale ``s`` is the one knob
that matters.

This example has no pretrained encoder, so it makes a stand-in that anyone
can run: scikit-learn's digits, standardised, projected on their first 32
principal components and normalised to unit length, all fitted on the
training half only. The numbers on real CLIP features are in the
:doc:`embeddings page </embeddings>`.
"""

# %%
# Unit-norm "embeddings"
# ----------------------
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, StandardScaler

from sklmargin import MarginSoftmaxClassifier, MarginSoftmaxClassifierCV

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.5, stratify=y, random_state=0
)
encoder = make_pipeline(StandardScaler(), PCA(32, random_state=0), Normalizer())
E_train = encoder.fit_transform(X_train)
E_test = encoder.transform(X_test)
print(f"{E_train.shape[0]} training rows of {E_train.shape[1]} features")
print(
    f"row norms: {np.linalg.norm(E_train, axis=1).min():.3f} to "
    f"{np.linalg.norm(E_train, axis=1).max():.3f}"
)


def scores(model):
    """Test accuracy and log loss of a fitted model."""
    return model.score(E_test, y_test), log_loss(y_test, model.predict_proba(E_test))


# %%
# The probes
# ----------
# No scaler in front: the rows are used as the encoder gave them, as one does
# with real embeddings, and every estimator at its defaults. (The linear
# estimator's default lift ``x -> [x, c] / |[x, c]|``, made to keep the
# information of a row's norm in raw tabular data, gives every unit row the
# same extra coordinate: a shared offset inside the cosine. On the CLIP
# features of ``benchmarks/results_embeddings.md`` it moved test accuracy by
# at most 0.25 points against ``constant_feature=None``, which turns it off.)
# scikit-learn 1.9 announces changes to LogisticRegressionCV's defaults
# (FutureWarnings); this example measures today's defaults.
warnings.filterwarnings("ignore", category=FutureWarning, module="sklearn")
probes = {
    "LogisticRegression() (C=1)": LogisticRegression(),
    "LogisticRegressionCV(Cs=10, cv=3)": LogisticRegressionCV(Cs=10, cv=3),
    "MarginSoftmaxClassifier()": MarginSoftmaxClassifier(),
    "MarginSoftmaxClassifierCV()": MarginSoftmaxClassifierCV(),
}
results = {}
for name, model in probes.items():
    model.fit(E_train, y_train)
    results[name] = scores(model)
    print(
        f"{name:34s} accuracy {results[name][0]:.3f}  log loss {results[name][1]:.3f}"
    )
lrcv_model, cv_model = (
    probes["LogisticRegressionCV(Cs=10, cv=3)"],
    probes["MarginSoftmaxClassifierCV()"],
)
print(f"LogisticRegressionCV chose C = {lrcv_model.C_[0]:.3g}")
print(
    f"MarginSoftmaxClassifierCV chose s = {cv_model.s_:.3g}, "
    f"T = {cv_model.temperature_:.3g}"
)

# %%
# s for the cosine head, C for the logistic one
# ---------------------------------------------
# A cosine logit is bounded: :math:`s\,(\cos\theta_j - m)` lies in
# :math:`[-s(1+m), s]`, so ``s`` caps how confident the model may become. A
# small ``s`` cannot separate the classes with confidence (underfitting, high
# log loss); a large one lets the training rows be fitted to certainty, and
# the test probabilities become over-confident. ``C`` is ignored by the
# cosine losses (they do not depend on the prototypes' norms); the
# regularisation is ``s`` (and ``m``, the margin, which asks the true class
# to win by ``m`` in cosine).
#
# For LogisticRegression on the same rows the logit is :math:`\langle w_j,
# x\rangle + b_j` with :math:`\lVert x\rVert = 1`: to be confident it needs
# large weights, which ``C`` penalises. The library default ``C = 1`` is
# strong regularisation for unit rows.
s_values = np.geomspace(1.0, 300.0, 11)
C_values = np.geomspace(0.1, 1e4, 11)
by_s = np.array(
    [scores(MarginSoftmaxClassifier(s=s).fit(E_train, y_train)) for s in s_values]
)
by_C = np.array(
    [
        scores(LogisticRegression(C=C, max_iter=1000).fit(E_train, y_train))
        for C in C_values
    ]
)

fig, axes = plt.subplots(1, 3, figsize=(14, 4))
axes[0].semilogx(
    s_values, 100 * by_s[:, 0], "o-", label="MarginSoftmaxClassifier(s=...)"
)
axes[0].set(xlabel="s", ylabel="test accuracy (%)", title="cosine head: accuracy vs s")
axes[1].semilogx(
    C_values, 100 * by_C[:, 0], "s-", color="C1", label="LogisticRegression(C=...)"
)
axes[1].set(xlabel="C", title="logistic head: accuracy vs C")
axes[2].loglog(s_values, by_s[:, 1], "o-", label="cosine head, vs s")
axes[2].loglog(C_values, by_C[:, 1], "s-", color="C1", label="logistic head, vs C")
axes[2].axhline(
    results["MarginSoftmaxClassifierCV()"][1],
    color="C2",
    ls="--",
    label="MarginSoftmaxClassifierCV (calibrated)",
)
axes[2].set(xlabel="s or C", ylabel="test log loss", title="log loss")
for ax, default in zip(axes[:2], (30.0, 1.0), strict=True):
    ax.axvline(default, color="0.5", ls=":", label="library default")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
axes[2].grid(alpha=0.3)
axes[2].legend(fontsize=8, loc="upper center")
fig.tight_layout()
plt.show()

# %%
# What the numbers say
# --------------------
# Computed from the fits above; the assertions make the documentation build
# fail if the text below stops being true.
lr_default, lrcv, ours, ours_cv = (results[name] for name in probes)
best_s = s_values[np.argmin(by_s[:, 1])]
print(
    f"LogisticRegression at C=1 against LogisticRegressionCV:\n"
    f"  {100 * (lr_default[0] - lrcv[0]):+.1f} points, log loss {lr_default[1]:.3f} "
    f"against {lrcv[1]:.3f}"
)
print(
    f"MarginSoftmaxClassifier() at its defaults against LogisticRegressionCV:\n"
    f"  {100 * (ours[0] - lrcv[0]):+.1f} points, {ours[1] - lrcv[1]:+.3f} log loss"
)
best_acc_s = s_values[np.argmax(by_s[:, 0])]
print(
    f"cosine head: best test accuracy at s = {best_acc_s:.3g}, lowest log loss "
    f"(T=1) at s = {best_s:.3g};\n  at s = {s_values[0]:g} and {s_values[-1]:g}: "
    f"{100 * (by_s[0, 0] - by_s[:, 0].max()):+.1f} and "
    f"{100 * (by_s[-1, 0] - by_s[:, 0].max()):+.1f} points"
)
assert lrcv[0] > lr_default[0] and lr_default[1] > 1.5 * lrcv[1]
assert abs(ours[0] - lrcv[0]) < 0.02
assert 5 <= best_acc_s <= 60 and 5 <= best_s <= 60  # a band of s in the middle
assert max(by_s[0, 0], by_s[-1, 0]) < by_s[:, 0].max() - 0.02

# %%
# LogisticRegression at its default ``C = 1`` is behind the tuned one, with
# more than one and a half times its log loss: on unit rows ``C`` has to be
# large (on the 512-d CLIP features of the embeddings page the gap is 10 to
# 15 points). The cosine head at its defaults (``s = 30``, ``m = 0.05``) is
# within a point or two of the tuned LogisticRegressionCV without any search.
# Both its accuracy and its log loss are best in a band of ``s`` (printed
# above): below it the model cannot be confident enough, above it the
# training rows are fitted to certainty, and the test rows pay for it, in
# log loss most. ``s`` plays the part that ``C`` plays for the logistic head,
# and like ``C`` it is worth a search.
# :class:`~sklmargin.MarginSoftmaxClassifierCV` picks ``s`` on held-out folds
# and then fits a temperature :math:`T` on the out-of-fold logits, so that
# ``predict_proba = softmax(z / T)`` is calibrated whatever ``s`` was chosen.
#
# On a GPU
# --------
# Embeddings often live in torch tensors on a GPU. With scikit-learn's array
# API dispatch the same estimators fit and predict there; only the parameter
# and gradient vectors go to SciPy's L-BFGS on the host (see
# :doc:`/array_api`)::
#
#     import os
#     os.environ["SCIPY_ARRAY_API"] = "1"  # before scipy is imported
#     import sklearn, torch
#     from sklmargin import MarginSoftmaxClassifier
#
#     sklearn.set_config(array_api_dispatch=True)
#     E = torch.as_tensor(E_train, device="cuda", dtype=torch.float32)
#     labels = torch.as_tensor(y_train, device="cuda")
#     probe = MarginSoftmaxClassifier().fit(E, labels)
#     probe.predict_proba(E)  # a cuda tensor
