"""
Decision regions and angular margins of each loss
=================================================

Three classes of 2-D points projected onto the unit circle, so that only the
angle of a sample matters. One classifier per loss is trained on them and drawn
side by side:

* the coloured regions are the *predictions*: the argmax of the margin-free
  logits, which is all that ``predict`` ever uses;
* the grey wedges are the *margin bands*: directions whose predicted class
  would still lose the margin-adjusted comparison
  :math:`f(\\cos\\theta_y) > \\cos\\theta_k` that training asks of every
  sample. A training sample inside a band is penalised even when it is
  classified correctly, so training moves the prototypes (arrows) to get as
  many samples as it can out of the bands;
* the title gives the total angular width of the bands on the circle.

The classifiers are fitted without intercept (``fit_intercept=False``, the
classes are balanced) and without the constant feature
(``constant_feature=None``): every region is then a cone through the origin,
as in the papers' pictures.
"""

# %%
# Data on the unit circle
# -----------------------
# Three Gaussian blobs centred on unit vectors 120 degrees apart, then
# normalised: the samples lie on the circle and overlap a little.
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

from sklmargin import MarginSoftmaxClassifier, get_margin

rng = np.random.RandomState(0)
centres = np.deg2rad([90.0, 210.0, 330.0])
X = np.vstack(
    [np.c_[np.cos(a), np.sin(a)] + 0.45 * rng.standard_normal((80, 2)) for a in centres]
)
y = np.repeat(np.arange(3), 80)
X /= np.linalg.norm(X, axis=1, keepdims=True)

# %%
# One classifier per loss
# -----------------------
# Margins as in the papers: CosFace's m = 0.35, ArcFace's m = 0.5 rad and
# SphereFace's m = 4. A-Softmax is shown at its final softening
# ``lambda_min=0`` (the paper's :math:`\psi`) so that its band is the one the
# formula promises; the library's default (``lambda_min=20``) trains with a
# narrower one.
settings = {
    "softmax": {"loss": "softmax"},
    "NormFace": {"loss": "normface"},
    "AM-Softmax m=0.35": {"loss": "am-softmax", "m": 0.35},
    "ArcFace m=0.5": {"loss": "arcface", "m": 0.5},
    "A-Softmax m=4": {"loss": "a-softmax", "m": 4, "lambda_min": 0.0},
}
models = {
    name: MarginSoftmaxClassifier(
        **params, fit_intercept=False, constant_feature=None
    ).fit(X, y)
    for name, params in settings.items()
}


def margin_band(model, directions):
    """Predicted class and "inside a margin band" for unit-norm directions."""
    prototypes = model.coef_ / np.linalg.norm(model.coef_, axis=1, keepdims=True)
    cos = directions @ prototypes.T
    predicted = np.argmax(model.decision_function(directions), axis=1)
    margin = get_margin(model.loss)
    if margin.name == "softmax":  # no margin, and its logits are not cosines
        return predicted, np.zeros(len(cos), dtype=bool)
    lam = 0.0
    if margin.uses_lambda:
        lam = margin.default_lambda if model.lambda_min is None else model.lambda_min
    rows = np.arange(len(cos))
    f_pred, _ = margin.target(cos[rows, predicted], model.m_, lam)
    others = cos.copy()
    others[rows, predicted] = -np.inf
    return predicted, f_pred <= others.max(axis=1)


# Band widths measured on 3600 directions around the circle.
circle_angles = np.linspace(0, 2 * np.pi, 3600, endpoint=False)
circle = np.c_[np.cos(circle_angles), np.sin(circle_angles)]
band_degrees = {
    name: 360.0 * margin_band(model, circle)[1].mean() for name, model in models.items()
}
for name, model in models.items():
    print(
        f"{name:18s} training accuracy {model.score(X, y):.3f}, "
        f"margin bands cover {band_degrees[name]:5.1f} degrees of the circle"
    )
# The text at the end of this page quotes these widths: check them against
# the formulas (3 bands of 2 arcsin(m / (2 sin 60)), of m rad, of 72 degrees).
expected = {
    "AM-Softmax m=0.35": 3 * 2 * np.degrees(np.arcsin(0.35 / (2 * np.sin(np.pi / 3)))),
    "ArcFace m=0.5": 3 * np.degrees(0.5),
    "A-Softmax m=4": 3 * 72.0,
}
for name, degrees in expected.items():
    assert abs(band_degrees[name] - degrees) < 3.0, (name, band_degrees[name])
assert all(0.935 <= model.score(X, y) < 0.955 for model in models.values())  # 94-95%

# %%
# Regions, bands and prototypes
# -----------------------------
# Points are drawn with a small radial jitter so that they do not hide each
# other; their features are exactly on the circle.
grid_1d = np.linspace(-1.6, 1.6, 321)
xx, yy = np.meshgrid(grid_1d, grid_1d)
plane = np.c_[xx.ravel(), yy.ravel()]
plane_directions = plane / np.maximum(
    np.linalg.norm(plane, axis=1, keepdims=True), 1e-12
)
jitter = 1.0 + 0.05 * rng.standard_normal(len(X))
colours = ["tab:blue", "tab:orange", "tab:green"]
light = ListedColormap(["#c6dbef", "#fdd0a2", "#c7e9c0"])

fig, axes = plt.subplots(1, len(models), figsize=(16, 3.9))
for ax, (name, model) in zip(axes, models.items(), strict=True):
    # Without intercept every region is a cone: the direction decides.
    predicted, in_band = margin_band(model, plane_directions)
    ax.pcolormesh(xx, yy, predicted.reshape(xx.shape), cmap=light, shading="auto")
    ax.contourf(
        xx, yy, in_band.reshape(xx.shape), levels=[0.5, 1.5], colors="0.45", alpha=0.55
    )
    ax.add_patch(plt.Circle((0, 0), 1.0, fill=False, color="0.3", lw=0.8))
    for k, colour in enumerate(colours):
        members = y == k
        ax.scatter(
            X[members, 0] * jitter[members],
            X[members, 1] * jitter[members],
            s=7,
            color=colour,
            edgecolor="k",
            linewidth=0.2,
        )
        w = model.coef_[k] / np.linalg.norm(model.coef_[k])
        ax.annotate(
            "",
            xy=1.45 * w,
            xytext=(0, 0),
            arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 2},
        )
    ax.set_title(
        f"{name}\nbands {band_degrees[name]:.0f} deg, "
        f"training accuracy {model.score(X, y):.2f}",
        fontsize=9,
    )
    ax.set_xlim(-1.6, 1.6)
    ax.set_ylim(-1.6, 1.6)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
fig.tight_layout()
plt.show()

# %%
# What the picture shows
# ----------------------
# Softmax and NormFace have no band: a sample is "good enough" as soon as it
# is on the right side of a boundary. AM-Softmax asks
# :math:`\cos\theta_y - m > \cos\theta_k`; with prototypes about 120 degrees
# apart that is a band of :math:`2\arcsin(m / (2\sin 60^\circ))` = 23.5
# degrees around each boundary (measured: about 72 degrees for the three bands).
# ArcFace asks :math:`\theta_y + m < \theta_k`, a band of exactly ``m`` =
# 0.5 rad = 28.6 degrees per boundary (measured: 86 degrees in all). A-Softmax
# asks :math:`m\,\theta_y < \theta_k`: a sample must be within
# :math:`1/(m+1)` of the angle between the prototypes, a band of 72 degrees
# per boundary for m = 4 (216 degrees in all), the widest by far.
#
# The bands are a training-time requirement only. ``predict`` uses the
# coloured regions, which barely move between the losses here: every model
# classifies 94-95% of the training points correctly.
