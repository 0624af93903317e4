"""
Tuning s and calibrating probabilities with MarginSoftmaxClassifierCV
=====================================================================

The logit scale ``s`` decides the accuracy of the cosine losses more than the
margin does, and a scale that is good for accuracy is not a calibrated
temperature. :class:`~sklmargin.MarginSoftmaxClassifierCV` does both in one
call, as :class:`~sklearn.linear_model.LogisticRegressionCV` does for ``C``:

1. per fold, a warm-started path over ascending ``s`` (each fit starts from the
   previous solution), scored on the held-out fold;
2. the ``s`` of best mean score, refit on all the training data;
3. a temperature ``T`` fitted on the out-of-fold logits at that ``s``, used in
   ``predict_proba = softmax(decision_function / T)``. ``predict`` and
   ``decision_function`` do not change.

This example runs it on a synthetic problem of 3,000 samples (20 features, 4
classes, 5% flipped labels; half for training, half for testing), draws the
cross-validated accuracy along the ``s`` path and a reliability diagram of the
test probabilities before and after the temperature.
"""

# %%
# The path over s
# ---------------
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.extmath import softmax

from sklmargin import GridEdgeWarning, MarginSoftmaxClassifierCV

X, y = make_classification(
    n_samples=3000,
    n_features=20,
    n_informative=8,
    n_redundant=4,
    n_classes=4,
    flip_y=0.05,
    random_state=0,
)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.5, random_state=0, stratify=y
)
# The default path runs from s=10 to 160 (checked here; this small fit only
# reads the path, so its choice, on the path's edge, is not warned about);
# starting at 1 shows the rise.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", GridEdgeWarning)
    small = MarginSoftmaxClassifierCV(cv=2).fit(X[:200], y[:200])
default_path = [p["s"] for p in small.cv_results_["params"]]
assert (min(default_path), max(default_path)) == (10.0, 160.0)
ss = np.geomspace(1.0, 160.0, 12)
model = make_pipeline(StandardScaler(), MarginSoftmaxClassifierCV(ss=ss, cv=5))
model.fit(X_train, y_train)
cv = model[-1]

ss = np.array([p["s"] for p in cv.cv_results_["params"]])
mean, std = cv.cv_results_["mean_test_score"], cv.cv_results_["std_test_score"]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.errorbar(ss, mean, yerr=std, marker="o", capsize=3, label="5-fold CV accuracy")
ax.axvline(cv.s_, color="C3", linestyle="--", label=f"chosen s = {cv.s_:.3g}")
ax.set_xscale("log")
ax.set_xlabel("logit scale s (AM-Softmax, m = 0.05)")
ax.set_ylabel("accuracy")
ax.legend()
ax.set_title("One warm-started path per fold")
fig.tight_layout()
print(f"chosen s = {cv.s_:.3g}, T = {cv.temperature_:.3f}")
print(f"test accuracy {model.score(X_test, y_test):.3f}")

# %%
# Iterations along the path
# -------------------------
# After the first point each fit starts from the previous solution, so a point
# whose optimum is close to its predecessor's costs fewer iterations than the
# cold start (printed: the small ``s`` here). Where the training rows are all
# classified with confidence, the gradient at larger ``s`` is already below the
# tolerance and a point costs none; not on this noisy problem, whose mid-path
# points cost the most.
iterations = cv.cv_results_["mean_n_iter"]
print("mean L-BFGS iterations per point:", np.round(iterations))
assert iterations[1:].min() < iterations[0] < iterations.max()

# %%
# Reliability before and after the temperature
# --------------------------------------------
# ``softmax(decision_function)`` is the probability at the training scale
# (``T = 1``); ``predict_proba`` divides the logits by the fitted ``T``. The
# diagram bins the test rows by their top-class confidence (equal-width bins)
# and compares it with the accuracy in each bin: a calibrated model lies on
# the diagonal.
logits = model.decision_function(X_test)
probas = {"T = 1 (training scale)": softmax(logits), "calibrated": None}
probas["calibrated"] = model.predict_proba(X_test)


def reliability(proba, y_true, n_bins=10):
    confidence, correct = proba.max(axis=1), proba.argmax(axis=1) == y_true
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    used = np.bincount(bins, minlength=n_bins) > 0
    count = np.maximum(np.bincount(bins, minlength=n_bins), 1)
    acc = np.bincount(bins, correct, minlength=n_bins) / count
    conf = np.bincount(bins, confidence, minlength=n_bins) / count
    ece = np.sum(np.bincount(bins, minlength=n_bins) * np.abs(acc - conf)) / len(y_true)
    return conf[used], acc[used], ece


fig, ax = plt.subplots(figsize=(4.5, 4.5))
ax.plot([0, 1], [0, 1], color="0.6", linestyle=":")
eces = []
for label, proba in probas.items():
    conf, acc, ece = reliability(proba, y_test)
    loss = log_loss(y_test, proba)
    ax.plot(conf, acc, marker="o", label=f"{label}: ECE {ece:.3f}, log loss {loss:.3f}")
    print(f"{label}: ECE {ece:.3f}, log loss {loss:.3f}")
    eces.append(ece)
ax.set_xlabel("mean top-class confidence")
ax.set_ylabel("accuracy")
ax.set_title(f"test set, T = {cv.temperature_:.2f}")
ax.legend(loc="upper left", fontsize="small")
fig.tight_layout()
plt.show()
# The temperature brings the probabilities closer to the diagonal:
assert eces[1] < eces[0]
