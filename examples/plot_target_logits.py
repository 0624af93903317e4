"""
The target-logit curves of every margin
=======================================

Each margin loss replaces the target cosine :math:`\\cos\\theta_y` by a smaller
value, so the true class must win by a margin. This example draws the target
logit (divided by the scale) against the angle between a sample and its class
prototype: :math:`\\cos\\theta` (softmax/NormFace), :math:`\\cos\\theta - m`
(AM-Softmax), :math:`\\cos(\\theta + m)` (ArcFace, with sklmargin's monotone
continuation past :math:`\\pi - m`), the multiplicative :math:`\\psi(\\theta)` of
L-/A-Softmax for m = 2, 3, 4, and the :math:`\\lambda`-softened :math:`\\psi`
that training starts from.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from sklmargin._margins import get_margin

theta = np.linspace(0, np.pi, 721)
cos = np.cos(theta)

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
left.plot(theta, cos, "k", label=r"$\cos\theta$ (NormFace)")
for m in (0.2, 0.35):
    f, _ = get_margin("am-softmax").target(cos, m)
    left.plot(theta, f, "--", label=f"AM-Softmax m={m}")
for m in (0.3, 0.5):
    f, _ = get_margin("arcface").target(cos, m)
    left.plot(theta, f, label=f"ArcFace m={m} rad")
left.set(xlabel=r"$\theta_y$ (radians)", ylabel="target logit / scale")
left.set_title("additive margins")
left.legend()

right.plot(theta, cos, "k", label=r"$\cos\theta$")
for m in (2, 3, 4):
    f, _ = get_margin("l-softmax").target(cos, m, lam=0.0)
    right.plot(theta, f, label=rf"$\psi$, m={m}")
for lam in (1.0, 5.0):
    f, _ = get_margin("l-softmax").target(cos, 4, lam=lam)
    right.plot(theta, f, ":", label=rf"$\psi$, m=4, $\lambda$={lam:g}")
right.set(xlabel=r"$\theta_y$ (radians)")
right.set_title("multiplicative margins (L-/A-Softmax)")
right.legend()
fig.tight_layout()
plt.show()
