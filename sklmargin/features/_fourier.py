"""Random Fourier feature maps that approximate the RBF kernel.

A random feature map ``z`` turns a kernel method into a linear one:
``z(x) · z(x') ≈ exp(-gamma |x - x'|^2)``. Because ``|z(x)|^2 ≈ k(x, x) = 1``, the
mapped samples already lie (almost) on the unit sphere, which is where the
cosine-based margin losses of sklmargin operate; this module provides that map for
the shallow regime.

Two frequency samplers are offered: i.i.d. Gaussian frequencies (Rahimi & Recht 2007)
and orthogonal random features (Yu et al. 2016), which couple the frequencies of each
block of ``n_features`` so that they are exactly orthogonal and lower the kernel
approximation error at equal width.
"""

import math
from dataclasses import dataclass
from functools import cache
from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.utils import check_random_state
from threadpoolctl import ThreadpoolController

from .._utils.array_api import (
    NUMPY,
    RowBlockWriter,
    check_fit_input,
    check_transform_input,
    get_namespace,
    in_float64,
    max_abs,
    move_fitted_arrays,
    numpy_dtype,
    row_blocks,
    to_device,
)
from .._utils.compat import Interval, StrOptions, fit_context
from .._utils.doc_link import DocLinkMixin
from ._gamma import scale_gamma

__all__ = ["FourierDescription", "RandomFourierFeatures"]


@cache
def _threadpool_controller() -> ThreadpoolController:
    """Return a process-wide controller; building one scans the loaded libraries."""
    return ThreadpoolController()


def _angle_groups(projection, offset, n_pairs):
    """Return a block's feature groups as ``(function, angles, first column)``.

    cos and sin of the pairs' angles, and the odd column's ``cos(. + offset)``,
    in the namespace of ``projection``.
    """
    pxp, _ = get_namespace(projection)  # the host's, or xp
    pairs = projection[:, :n_pairs]
    groups = [(pxp.cos, pairs, 0), (pxp.sin, pairs, n_pairs)]
    if offset.shape[0]:
        groups.append((pxp.cos, projection[:, n_pairs:] + offset, 2 * n_pairs))
    return groups


def _draw_frequencies(
    rng: np.random.RandomState, n_features: int, n_frequencies: int, orthogonal: bool
) -> np.ndarray:
    """Draw unit-bandwidth frequencies, each column distributed as N(0, I).

    Parameters
    ----------
    rng : RandomState
        Source of randomness.
    n_features : int
        Dimension ``d`` of each frequency.
    n_frequencies : int
        Number of frequencies (columns).
    orthogonal : bool
        If True, frequencies come in blocks of ``d`` mutually orthogonal vectors:
        the columns of a Haar-random orthogonal matrix, each rescaled by an
        independent chi(d) norm so that its marginal law stays N(0, I). The last
        block keeps only the columns it needs (a uniformly random orthonormal
        frame), which also avoids a d x d factorisation when d is large.

    Returns
    -------
    frequencies : ndarray of shape (n_features, n_frequencies)
    """
    if not orthogonal:
        return rng.standard_normal((n_features, n_frequencies))

    blocks = []
    remaining = n_frequencies
    # Multithreaded Householder QR (many small synchronised panel updates) was 6-10x
    # slower than one thread on our 2-core machines under load (d=784: 0.8 s vs
    # 0.13 s; d=2000: 8 s vs 0.7 s), so the QRs run single-threaded. A cached
    # controller makes the switch cost microseconds instead of a library scan.
    with _threadpool_controller().limit(limits=1, user_api="blas"):
        while remaining > 0:
            width = min(n_features, remaining)
            q, r = np.linalg.qr(rng.standard_normal((n_features, width)))
            # QR is unique only up to the signs of R's diagonal; fixing them makes
            # Q Haar distributed instead of biased by LAPACK's convention
            # (Mezzadri 2007, arXiv math-ph/0609050).
            q *= np.where(np.diag(r) < 0, -1.0, 1.0)
            # A Gaussian vector's length is chi(d) distributed, independent of its
            # direction; orthogonalisation kept the directions, so restore the
            # lengths.
            norms = np.sqrt(rng.chisquare(n_features, size=width))
            blocks.append(q * norms)
            remaining -= width
    return np.hstack(blocks)


@dataclass(frozen=True)
class FourierDescription:
    """``z(x) = scale * [cos(x W_p), sin(x W_p), cos(x W_o + offset)]``.

    A fitted map's arrays, as a graph (ONNX) or a gradient reads them.
    """

    pair_weights: np.ndarray  # (n_features, p)
    odd_weights: np.ndarray  # (n_features, 0 or 1)
    odd_offset: np.ndarray  # (0 or 1,)
    scale: float  # sqrt(2 / n_components)

    def forward(self, X):
        """Return ``z(X)`` of float64 NumPy rows."""
        pairs = X @ self.pair_weights
        odd = X @ self.odd_weights + self.odd_offset
        return self.scale * np.hstack([np.cos(pairs), np.sin(pairs), np.cos(odd)])

    def head_gradients(self, matrix, dtype):
        r"""Input gradients of logits read off ``z`` by a head ``matrix``.

        As :meth:`NystroemDescription.head_gradients`: ``(width, block)``,
        with :math:`\partial \cos(\omega^\top x + b) / \partial x =
        -\sin(\omega^\top x + b)\, \omega` (and :math:`\cos\, \omega` for
        the sines).
        """
        weights = np.hstack([self.pair_weights, self.odd_weights]).astype(dtype)
        n_pairs = self.pair_weights.shape[1]
        width = weights.shape[1]

        def block(x, factors):
            projection = x @ weights
            projection[:, n_pairs:] += self.odd_offset.astype(dtype)
            cos, sin = np.cos(projection), np.sin(projection)
            features = dtype.type(self.scale) * np.hstack(
                [cos[:, :n_pairs], sin[:, :n_pairs], cos[:, n_pairs:]]
            )
            alpha, beta = factors(features)
            g = alpha[:, :, None] * matrix.T[None, :, :]  # (n, K, width_out)
            if beta is not None:
                g += beta[:, :, None] * features[:, None, :]
            g *= dtype.type(self.scale)
            # d cos(p)/dp = -sin(p), d sin(p)/dp = cos(p); p = x w (+ b)
            dp = np.empty((x.shape[0], matrix.shape[1], width), dtype=dtype)
            dp[:, :, :n_pairs] = (
                -sin[:, None, :n_pairs] * g[:, :, :n_pairs]
                + cos[:, None, :n_pairs] * g[:, :, n_pairs : 2 * n_pairs]
            )
            dp[:, :, n_pairs:] = -sin[:, None, n_pairs:] * g[:, :, 2 * n_pairs :]
            return dp @ weights.T

        return width, block


class RandomFourierFeatures(
    DocLinkMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    r"""Approximate the RBF kernel feature map with random Fourier features.

    For frequencies :math:`\omega_1, \dots, \omega_p \sim \mathcal{N}(0, 2\gamma I)`
    (Bochner's theorem for the Gaussian kernel) the map

    .. math::

        z(x) = \sqrt{\tfrac{2}{D}}\,\big[\cos(\omega_1^\top x), \dots,
        \cos(\omega_p^\top x),\ \sin(\omega_1^\top x), \dots,
        \sin(\omega_p^\top x)\big], \qquad D = 2p,

    satisfies :math:`\mathbb{E}[z(x)^\top z(x')] = k(x, x') =
    \exp(-\gamma \lVert x - x' \rVert^2)` and :math:`\lVert z(x) \rVert^2 = 1`
    exactly, because each [cos, sin] pair contributes
    :math:`\tfrac{2}{D}\cos(\omega^\top(x - x'))`.

    **Odd widths.** When ``n_components`` :math:`D = 2p + 1` is odd, the last column
    is one extra random-phase feature
    :math:`\sqrt{2/D}\,\cos(\omega_{p+1}^\top x + b)` with
    :math:`b \sim U(0, 2\pi)`, as in scikit-learn's ``RBFSampler``. Every column then
    has the same scale :math:`\sqrt{2/D}`; since
    :math:`\mathbb{E}_b[2\cos(\omega^\top x + b)\cos(\omega^\top x' + b)] =
    \cos(\omega^\top (x - x'))`, the pairs contribute :math:`2p/D` and the extra
    column :math:`1/D` of the kernel, so the estimate stays unbiased. The price is
    that :math:`\lVert z(x) \rVert^2` is then only within :math:`[(D-1)/D, (D+1)/D]`
    (within :math:`[0, 2]` for ``n_components=1``).

    **Orthogonal random features** (``orthogonal=True``, Yu et al. 2016). Per block
    of :math:`d` frequencies, :math:`W = \sqrt{2\gamma}\, S Q` where :math:`Q` is a
    uniformly random orthogonal :math:`d \times d` matrix (QR of a Gaussian matrix
    with sign correction) and :math:`S` a diagonal of independent
    :math:`\chi(d)`-distributed norms; blocks are stacked until :math:`p` (or
    :math:`p + 1`) frequencies are reached, the last one truncated. Each frequency
    keeps the law :math:`\mathcal{N}(0, 2\gamma I)`, so the estimate remains
    unbiased, but frequencies within a block are exactly orthogonal, which lowers the
    variance of the kernel estimate.

    The frequencies depend only on ``n_features_in_``, ``n_components``,
    ``orthogonal`` and ``random_state``; the data enter only through ``gamma_``.

    Parameters
    ----------
    gamma : 'scale' or float, default='scale'
        Kernel coefficient :math:`\gamma > 0`. ``'scale'`` uses
        ``1 / (n_features * Var(X))`` as ``SVC`` does, where ``Var(X)`` is the
        variance of all entries of ``X`` (one flattened array), each row weighted by
        its sample weight; constant ``X`` gives ``gamma_ = 1.0``.
    n_components : int, default=500
        Output width :math:`D \geq 1`; odd values are allowed (see above).
    orthogonal : bool, default=True
        Draw orthogonal random features (True) or i.i.d. Gaussian frequencies
        (False).
    random_state : int, RandomState instance or None, default=None
        Seed of the frequencies and of the phase of the odd column. Pass an int for
        reproducible output across calls.

    Attributes
    ----------
    gamma_ : float
        The kernel coefficient used, ``gamma`` resolved against the training data.
    random_weights_ : ndarray of shape (n_features_in_, ceil(n_components / 2))
        Frequencies, one per column, already scaled by :math:`\sqrt{2\gamma}`.
        Columns ``0 .. p-1`` feed the [cos, sin] pairs, column ``p`` (odd widths
        only) the random-phase feature.
    random_offset_ : ndarray of shape (n_components % 2,)
        Phase :math:`b` of the random-phase feature; empty when ``n_components`` is
        even.
    n_features_in_ : int
        Number of features seen during :term:`fit`.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during :term:`fit`. Defined only when `X` has feature
        names that are all strings.

    See Also
    --------
    sklearn.kernel_approximation.RBFSampler : Random Fourier features with a random
        phase per feature (cos only), i.i.d. frequencies.
    sklearn.kernel_approximation.Nystroem : Data-dependent kernel approximation from a
        subset of the training data.

    Notes
    -----
    ``transform`` works in row blocks, so apart from the output its memory use is
    bounded by a few tens of MB whatever the number of samples. float32 input is
    transformed in float32, everything else in float64. Sparse input is accepted;
    the output is always dense.

    References
    ----------
    .. [1] A. Rahimi and B. Recht, "Random Features for Large-Scale Kernel
       Machines", Advances in Neural Information Processing Systems 20, 2007.
    .. [2] F. X. Yu, A. T. Suresh, K. Choromanski, D. Holtmann-Rice and S. Kumar,
       "Orthogonal Random Features", Advances in Neural Information Processing
       Systems 29, 2016. arXiv:1610.09072.

    Examples
    --------
    >>> import numpy as np
    >>> from sklmargin import RandomFourierFeatures
    >>> X = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]])
    >>> rff = RandomFourierFeatures(gamma=0.5, n_components=1000, random_state=0)
    >>> Z = rff.fit_transform(X)
    >>> Z.shape
    (3, 1000)
    >>> bool(np.allclose(np.sum(Z**2, axis=1), 1.0))
    True
    >>> bool(abs(Z[0] @ Z[1] - np.exp(-0.5 * 2.0)) < 0.05)
    True
    """

    _parameter_constraints: dict = {
        "gamma": [StrOptions({"scale"}), Interval(Real, 0.0, None, closed="neither")],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "orthogonal": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        gamma: str | float = "scale",
        n_components: int = 500,
        orthogonal: bool = True,
        random_state: int | np.random.RandomState | None = None,
    ):
        self.gamma = gamma
        self.n_components = n_components
        self.orthogonal = orthogonal
        self.random_state = random_state

    @fit_context(prefer_skip_nested_validation=True)
    def fit(
        self, X: ArrayLike, y: None = None, sample_weight: ArrayLike | None = None
    ) -> "RandomFourierFeatures":
        """Resolve ``gamma`` and draw the random frequencies.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data. Only used for its number of features and, when
            ``gamma='scale'``, its weighted variance (computed on ``X``'s
            device for an array API ``X`` under ``array_api_dispatch``; the
            frequencies are drawn on the host and moved there).
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows in the variance of ``gamma='scale'``.
            Integer weights are equivalent to repeating rows.

        Returns
        -------
        self : RandomFourierFeatures
            The fitted transformer.
        """
        X, sample_weight, xp, device = check_fit_input(
            self, X, sample_weight, accept_sparse="csr"
        )

        scale = isinstance(self.gamma, str)  # the constraints admit only "scale"
        self.gamma_ = scale_gamma(X, sample_weight) if scale else float(self.gamma)

        n_pairs, n_odd = divmod(int(self.n_components), 2)
        rng = check_random_state(self.random_state)
        # Draw in float64 whatever the input dtype, so that a float32 fit uses the
        # same frequencies (rounded) as a float64 fit with the same seed.
        frequencies = _draw_frequencies(
            rng, X.shape[1], n_pairs + n_odd, self.orthogonal
        )
        offset = rng.uniform(0.0, 2.0 * np.pi, size=n_odd)
        dtype = numpy_dtype(X.dtype)
        frequencies *= np.sqrt(2.0 * self.gamma_)
        self.random_weights_ = frequencies.astype(dtype, copy=False)
        self.random_offset_ = offset.astype(dtype, copy=False)
        if xp is not NUMPY:
            move_fitted_arrays(self, ("random_weights_", "random_offset_"), xp, device)
        return self

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Map ``X`` to the random Fourier features.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Data to transform: NumPy, or an array API array (under
            ``array_api_dispatch``) of the namespace and device of the fit's.

        Returns
        -------
        X_new : array of shape (n_samples, n_components)
            ``[cos, sin]`` features (plus one random-phase cosine for odd widths),
            float32 for float32 input, float64 otherwise; ``X``'s namespace and
            device (NumPy for sparse input).
        """
        X, xp, device = check_transform_input(
            self, X, "random_weights_", accept_sparse="csr"
        )
        dtype = X.dtype
        weights = xp.astype(self.random_weights_, dtype, copy=False)
        offset = xp.astype(self.random_offset_, dtype, copy=False)
        # Widths come from the fitted arrays, not from `n_components`, so that a
        # later `set_params` cannot desynchronise them.
        n_pairs = weights.shape[1] - offset.shape[0]
        scale = math.sqrt(2.0 / self._n_features_out)
        out = RowBlockWriter(xp, (X.shape[0], self._n_features_out), dtype, device)
        # |x . w| <= max|x| * max_j |w_j|_1: beyond float32 the projection is
        # inf and cos(inf) NaN (float32 rows of 1e37 asked of a model fitted
        # in float64), so such blocks are projected in float64 (on the host
        # where the device has none); the features are bounded by 1 and cast
        # back.
        reach = float(xp.max(xp.sum(xp.abs(self.random_weights_), axis=0)))
        limit = float(np.finfo(numpy_dtype(dtype)).max) / 4.0
        row_bytes = weights.shape[1] * numpy_dtype(dtype).itemsize
        for rows in row_blocks(X, row_bytes):
            block, block_weights, block_offset = X[rows, :], weights, offset
            if dtype != xp.float64 and max_abs(block) * reach > limit:
                block, block_weights, block_offset = in_float64(
                    xp, device, block, self.random_weights_, self.random_offset_
                )
            groups = _angle_groups(block @ block_weights, block_offset, n_pairs)
            if isinstance(out.out, np.ndarray):  # NumPy leaf: in place, out=
                for function, angles, start in groups:
                    function(angles, out=out.out[rows, start : start + angles.shape[1]])
                out.out[rows] *= out.out.dtype.type(scale)
                continue
            # Each group cast to dtype, then scaled (the NumPy order for a
            # float64 projection), and written before the next is computed.
            parts = (
                to_device(function(angles), xp, device, dtype=dtype) * scale
                for function, angles, _ in groups
            )
            out.write_columns(rows, parts)
        return out.result()

    def describe(self):
        """Return the fitted map as a :class:`FourierDescription` (float64)."""
        weights = np.asarray(self.random_weights_, dtype=np.float64)
        offset = np.asarray(self.random_offset_, dtype=np.float64)
        n_pairs = weights.shape[1] - offset.shape[0]
        return FourierDescription(
            pair_weights=weights[:, :n_pairs],
            odd_weights=weights[:, n_pairs:],
            odd_offset=offset,
            scale=float(np.sqrt(2.0 / self._n_features_out)),
        )

    @property
    def _n_features_out(self) -> int:
        """Output width, read by ``get_feature_names_out``."""
        return 2 * self.random_weights_.shape[1] - self.random_offset_.shape[0]

    def __sklearn_tags__(self):
        """Declare sparse input support and float32/float64 preservation."""
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
