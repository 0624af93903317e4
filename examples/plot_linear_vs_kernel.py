"""
Linear and kernel margin softmax against logistic regression and SVC
====================================================================

Decision regions on two non-linear toy problems: the linear estimator draws
cones through the origin shifted by a bias (a cosine classifier), the kernel
estimator learns the same loss over random Fourier features and follows the
data like ``SVC(kernel="rbf")``.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_circles, make_moons
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier

datasets = {
    "moons": make_moons(n_samples=300, noise=0.15, random_state=0),
    "circles": make_circles(n_samples=300, factor=0.45, noise=0.1, random_state=0),
}
models = {
    "LogisticRegression": LogisticRegression(),
    "AM-Softmax (linear)": MarginSoftmaxClassifier(loss="am-softmax"),
    "AM-Softmax (kernel)": KernelMarginSoftmaxClassifier(
        n_components=300, random_state=0
    ),
    "SVC rbf": SVC(),
}

fig, axes = plt.subplots(len(datasets), len(models), figsize=(13, 6.4))
for row, (data_name, (X, y)) in enumerate(datasets.items()):
    xx, yy = np.meshgrid(
        np.linspace(X[:, 0].min() - 0.5, X[:, 0].max() + 0.5, 200),
        np.linspace(X[:, 1].min() - 0.5, X[:, 1].max() + 0.5, 200),
    )
    grid = np.c_[xx.ravel(), yy.ravel()]
    for col, (model_name, model) in enumerate(models.items()):
        clf = make_pipeline(StandardScaler(), model).fit(X, y)
        ax = axes[row, col]
        ax.contourf(xx, yy, clf.predict(grid).reshape(xx.shape), alpha=0.3)
        ax.scatter(X[:, 0], X[:, 1], c=y, s=8, edgecolor="k", linewidth=0.2)
        ax.set_title(f"{model_name}\n{data_name}: {clf.score(X, y):.2f}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
fig.tight_layout()
plt.show()
