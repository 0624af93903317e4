"""Property-based checks of the pointwise loss (hypothesis)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sklmargin import margin_softmax_loss

cosines = st.integers(2, 6).flatmap(
    lambda k: st.tuples(
        arrays(np.float64, (7, k), elements=st.floats(-1, 1)),
        arrays(np.int64, 7, elements=st.integers(0, k - 1)),
    )
)


@settings(max_examples=60, deadline=None)
@given(cosines, st.floats(0.0, 0.6), st.floats(1.0, 40.0))
def test_loss_is_finite_positive_and_grows_with_the_margin(data, m, s):
    cos, y = data
    base, grad = margin_softmax_loss(cos, y, loss="am-softmax", m=0.0, s=s)
    value, _ = margin_softmax_loss(cos, y, loss="am-softmax", m=m, s=s)
    arc, arc_grad = margin_softmax_loss(cos, y, loss="arcface", m=m, s=s)
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    assert np.isfinite(arc) and np.all(np.isfinite(arc_grad))
    assert 0.0 <= base <= value + 1e-12
    assert base <= arc + 1e-12  # cos(theta + m) <= cos(theta)


@settings(max_examples=60, deadline=None)
@given(cosines, st.floats(1.0, 5.0), st.floats(1.0, 1.5))
def test_sv_and_multiplicative_margins_only_add_loss(data, m, t):
    cos, y = data
    norms = np.full((len(y), 1), 3.0)
    plain, _ = margin_softmax_loss(cos, y, loss="a-softmax", m=1.0, norms=norms)
    margin, grad = margin_softmax_loss(cos, y, loss="a-softmax", m=m, norms=norms)
    sv, _ = margin_softmax_loss(cos, y, loss="a-softmax", m=m, t=t, norms=norms)
    assert np.all(np.isfinite(grad))
    assert plain <= margin + 1e-12 <= sv + 2e-12
