"""
Open-set recognition: rejecting digits never seen in training
==============================================================

A classifier trained on digits 0-5 has to call a 7 something: its
``predict`` can only answer one of the classes it knows.
:class:`~sklmargin.OpenSetClassifier` adds the answer "none of them": it
thresholds the estimator's ``score_samples``, set so that 5% of the known
classes' rows would be rejected (measured on out-of-fold scores), and predicts
``unknown_label_`` below it (``-1`` here: chosen at ``fit`` never to be a
class). Its ``decision_function`` and ``predict_proba`` stay the estimator's,
over the known classes; how far a row is from the threshold is
``open_set_margin``.

The score of :class:`~sklmargin.KernelMarginSoftmaxClassifier` is

.. math::

    \\operatorname{score}(x) = -\\gamma \\min_c \\lVert x - c \\rVert^2
    + \\log \\max_j \\operatorname{softmax}\\big(z(x) / T\\big)_j ,

the log-kernel to the nearest Nyström centre (a centre is a training row of a
known class) plus the log of the largest class probability at a temperature
:math:`T = s / 30` -- *close to the data* and *sure of one class*. This example
fits it on half of the digits 0-5 and scores the other half together with all
the 6-9s, which it has never seen.
"""

# %%
# Fit on the known digits
# -----------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklmargin import KernelMarginSoftmaxClassifier, OpenSetClassifier

X, y = load_digits(return_X_y=True)
known = y <= 5
X_train, X_known_test, y_train, y_known_test = train_test_split(
    X[known], y[known], test_size=0.5, random_state=0, stratify=y[known]
)
X_unknown, y_unknown = X[~known], y[~known]

model = make_pipeline(
    StandardScaler(),
    OpenSetClassifier(
        # metric=None: the plain RBF kernel on the scaled pixels, the model the
        # open-set page's tables measured; the last section fits the default,
        # whose learned input metric rescales the pixels (and with them the
        # distance term).
        KernelMarginSoftmaxClassifier(n_components=500, metric=None, random_state=0),
        target_rejection=0.05,
    ),
)
model.fit(X_train, y_train)
open_set = model[-1]
unknown = open_set.unknown_label_
print(
    f"threshold = {open_set.threshold_:.3f}, classes = {open_set.classes_}, "
    f"unknown_label_ = {unknown}"
)

# %%
# What it predicts
# ----------------
# About 5% of the known test digits are rejected, as asked, and those it keeps
# are almost all right. Most unseen digits are rejected too; an unseen digit
# that is not gets the known class it resembles most (printed below: the 9s
# it keeps are mostly called 5 or 3, the 8s 1, 3 or 2).
known_predicted = model.predict(X_known_test)
unknown_predicted = model.predict(X_unknown)
accepted = known_predicted != unknown
print(f"known digits rejected:  {np.mean(~accepted):.1%}")
print(
    "known digits accepted and correct: "
    f"{np.mean(known_predicted[accepted] == y_known_test[accepted]):.1%}"
)
for digit in range(6, 10):
    rows = unknown_predicted[y_unknown == digit]
    kept, counts = np.unique(rows[rows != unknown], return_counts=True)
    called = ", ".join(f"{k} ({c})" for k, c in zip(kept, counts, strict=True))
    print(
        f"unseen {digit}: rejected {np.mean(rows == unknown):.1%}; "
        f"kept ones called {called}"
    )


def most_called(digit, n):
    """The n known classes an unseen digit is most often called."""
    rows = unknown_predicted[(y_unknown == digit) & (unknown_predicted != unknown)]
    kept, counts = np.unique(rows, return_counts=True)
    return set(kept[np.argsort(-counts)[:n]].tolist())


# The text above, checked (the documentation build fails if it drifts).
assert 0.02 <= np.mean(~accepted) <= 0.10
assert np.mean(known_predicted[accepted] == y_known_test[accepted]) > 0.97
assert unknown == -1 and np.mean(unknown_predicted == unknown) > 0.5
assert most_called(9, 2) == {3, 5} and most_called(8, 3) == {1, 2, 3}

# %%
# Scores of known and unseen digits, and ROC curves
# -------------------------------------------------
# Left: the score of every test row and the threshold (negated, on a log
# scale). Right: how well each
# score separates known from unseen digits at every threshold, against the
# maximum softmax probability (Hendrycks and Gimpel 2017) of the same model
# and of a logistic regression.
score_known = model.score_samples(X_known_test)
score_unknown = model.score_samples(X_unknown)

kernel = make_pipeline(model[0], open_set.estimator_)  # the refitted model inside
logistic = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
logistic.fit(X_train, y_train)
X_test = np.vstack([X_known_test, X_unknown])
is_known = np.r_[np.ones(len(X_known_test)), np.zeros(len(X_unknown))]
scores = {
    "score_samples (kernel)": np.r_[score_known, score_unknown],
    "max probability (kernel)": kernel.predict_proba(X_test).max(axis=1),
    "max probability (LogisticRegression)": logistic.predict_proba(X_test).max(axis=1),
}

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
# -score spans several decades (printed): a log axis, typical rows on the left.
low, high = np.percentile(-score_known, [5, 95])
print(
    f"-score_samples: known digits {low:.2f} to {high:.2f} (5-95%), "
    f"unseen digits up to {-score_unknown.min():.0f}"
)
assert -score_unknown.min() > 100 * np.median(-score_known)
floor = 1e-2
bins = np.geomspace(floor, max(-score_unknown.min(), -score_known.min()), 40)
left.hist(np.maximum(-score_known, floor), bins=bins, alpha=0.6, label="known 0-5")
left.hist(np.maximum(-score_unknown, floor), bins=bins, alpha=0.6, label="unseen 6-9")
left.axvline(-open_set.threshold_, color="k", linestyle="--", label="threshold")
left.set_xscale("log")
left.set_xlabel(f"-score_samples (values below {floor:g} drawn at {floor:g})")
left.set_ylabel("test rows")
left.set_title("Rejected right of the threshold")
left.legend()
for name, score in scores.items():
    fpr, tpr, _ = roc_curve(is_known, score)
    auroc = roc_auc_score(is_known, score)
    right.plot(fpr, tpr, label=f"{name}: AUROC {auroc:.3f}")
    print(f"AUROC {name}: {auroc:.3f}")
right.plot([0, 1], [0, 1], color="0.7", linewidth=0.8)
right.set_xlabel("unseen digits accepted (false positive rate)")
right.set_ylabel("known digits accepted (true positive rate)")
right.set_title("Known against unseen digits")
right.legend(loc="lower right")
fig.tight_layout()
plt.show()

# %%
# On the project's benchmark data sets the same score reaches a higher mean AUROC
# than the maximum probability of every baseline measured; see the
# :doc:`open-set page </openset>` for the numbers and for where it does not
# help (the linear estimator has no distance term, so its score is the
# tempered maximum probability alone).

# %%
# With the learned input metric
# -----------------------------
# The same open-set model over the kernel estimator's default, which first
# learns an input metric from the known classes and so changes which rows
# look unfamiliar. At the same 5% target it rejects more of the unseen digits
# here (both rates printed), as on most data measured; on some it goes the
# other way (the :doc:`open-set page </openset>` has the measurements).
with_metric = make_pipeline(
    StandardScaler(),
    OpenSetClassifier(
        KernelMarginSoftmaxClassifier(n_components=500, random_state=0),
        target_rejection=0.05,
    ),
).fit(X_train, y_train)
rejected = {
    "metric=None": np.mean(unknown_predicted == unknown),
    "default metric": np.mean(with_metric.predict(X_unknown) == unknown),
}
for name, share in rejected.items():
    print(f"{name}: unseen digits rejected {share:.1%}")
assert rejected["default metric"] > rejected["metric=None"]
