"""
What the kernel machine's learned metric sees: relevance per input
==================================================================

An RBF kernel compares rows by their distance, and weighs every input column
alike: columns that do not matter dilute the distances that do.
:class:`~sklmargin.KernelMarginSoftmaxClassifier` therefore learns a metric
first (its default ``metric="diagonal", metric_steps=2``): a pilot fit on at
most 4,000 rows and 500 centres, then the average outer product of the
gradients of its class logits with respect to the input (as Recursive
Feature Machines do, Radhakrishnan et al., Science 2024), whose diagonal
rescales each column before the final fit.
That diagonal, normalised to 1 for the most relevant column, is the fitted
attribute ``feature_relevance_``: a feature importance of the kernel machine.

This example shows it twice: on a real data set (scikit-learn's bundled
breast cancer data, 569 tumours and 30 measurements) with the accuracy with
and without the metric beside ``SVC(C=10, gamma="scale")``, and on a
synthetic problem where we know which columns are noise.
"""

# %%
# A real data set: breast cancer
# ------------------------------
# Every model sits in a Pipeline after a StandardScaler, and is scored by
# 5-fold cross-validation (stratified, the same folds for every model).
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.model_selection import StratifiedKFold, cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from sklmargin import KernelMarginSoftmaxClassifier

data = load_breast_cancer()
X, y = data.data, data.target
folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
models = {
    "metric (default)": KernelMarginSoftmaxClassifier(random_state=0),
    "no metric": KernelMarginSoftmaxClassifier(metric=None, random_state=0),
    'SVC(C=10, gamma="scale")': SVC(C=10, gamma="scale"),
}
accuracy = {
    name: cross_val_score(make_pipeline(StandardScaler(), model), X, y, cv=folds)
    for name, model in models.items()
}
for name, scores in accuracy.items():
    print(f"{name:>26}: {100 * scores.mean():.2f}% (+- {100 * scores.std():.2f})")

# %%
# The relevance the metric learned, fitted once on all the rows. The bar
# chart is sorted; the title quotes the cross-validated accuracies above.
kernel = make_pipeline(StandardScaler(), KernelMarginSoftmaxClassifier(random_state=0))
kernel.fit(X, y)
relevance = kernel[-1].feature_relevance_
order = np.argsort(relevance)
fig, ax = plt.subplots(figsize=(7, 7.5))
ax.barh(np.array(data.feature_names)[order], relevance[order], color="tab:blue")
ax.set_xlabel("feature_relevance_ (1 = most relevant column)")
ax.set_title(
    "breast cancer, 5-fold accuracy:\n"
    + ", ".join(f"{name} {100 * s.mean():.1f}%" for name, s in accuracy.items()),
    fontsize=9,
)
fig.tight_layout()
plt.show()

ranked = np.array(data.feature_names)[order[::-1]]
print("most relevant:", ", ".join(ranked[:5]))
print("least relevant:", ", ".join(ranked[-5:]))
print(f"relevance spans {relevance.min():.3f} to {relevance.max():.3f}")

# %%
# What the printout says, checked: the relevance is a normalised importance
# (its largest value is 1) and it is far from flat: the metric rescales each
# column by ``sqrt(relevance)``. Here, where the 30 measurements describe the
# same tumours and many of them are near copies of each other (radius,
# perimeter, area), the metric does not buy accuracy: the three models' mean
# accuracies differ by less than the largest fold-to-fold standard deviation
# printed above. Its job is the case below.
means = [scores.mean() for scores in accuracy.values()]
assert np.isclose(relevance.max(), 1.0)
assert relevance.min() < 0.1
assert max(means) - min(means) < max(scores.std() for scores in accuracy.values())

# %%
# A synthetic problem with known noise columns
# --------------------------------------------
# 3,000 samples, 4 classes, 5 informative columns followed by 15 columns of
# pure noise (``shuffle=False`` keeps them in that order); half to train, half
# to test. Without the metric the kernel spreads its width over all 20
# columns; with it, the noise columns' relevance drops and the kernel sees
# mostly the 5 that carry the classes.
X, y = make_classification(
    n_samples=3000,
    n_features=20,
    n_informative=5,
    n_redundant=0,
    n_classes=4,
    shuffle=False,
    random_state=0,
)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.5, stratify=y, random_state=0
)
test_accuracy = {}
for name, model in models.items():
    fitted = make_pipeline(StandardScaler(), model).fit(X_train, y_train)
    test_accuracy[name] = fitted.score(X_test, y_test)
    if name == "metric (default)":
        noisy_relevance = fitted[-1].feature_relevance_
for name, score in test_accuracy.items():
    print(f"{name:>26}: test accuracy {100 * score:.2f}%")
informative, noise = noisy_relevance[:5], noisy_relevance[5:]
print(
    f"relevance: informative columns {informative.min():.3f} to "
    f"{informative.max():.3f}, noise columns {noise.min():.3f} to {noise.max():.3f}"
)

fig, ax = plt.subplots(figsize=(7, 3.2))
colours = ["tab:blue"] * 5 + ["tab:gray"] * 15
ax.bar(np.arange(20), noisy_relevance, color=colours)
ax.set_xticks(np.arange(20))
ax.set_xlabel("input column (0-4 informative, blue; 5-19 noise, grey)")
ax.set_ylabel("feature_relevance_")
ax.set_title(
    "synthetic, test accuracy: "
    + ", ".join(f"{name} {100 * s:.1f}%" for name, s in test_accuracy.items()),
    fontsize=8,
)
fig.tight_layout()
plt.show()

# %%
# What the text says, checked: every noise column is less relevant than every
# informative one (by more than ten times here), and the metric makes the
# kernel machine more accurate than without it and than SVC, whose RBF
# kernel weighs the 15 noise columns as much as the 5 that matter.
assert noise.max() < informative.min() / 10
assert test_accuracy["metric (default)"] > test_accuracy["no metric"] + 0.05
assert test_accuracy["metric (default)"] > test_accuracy['SVC(C=10, gamma="scale")']
