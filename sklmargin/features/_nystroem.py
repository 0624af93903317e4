r"""Nyström feature map of the RBF kernel, float32 end to end.

The map :math:`z(x) = \Lambda^{-1/2} U^\top k_C(x)` turns a kernel method into a
linear one on :math:`M` features, with :math:`k_C(x) = (k(x, c_1), \dots,
k(x, c_M))` and :math:`K_{CC} = U \Lambda U^\top` the kernel matrix of the centres.
Unlike random Fourier features, Nyström adapts to the data: at equal width its
kernel error is much lower, which is what closes the gap to an exact SVC.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.utils import check_random_state

from .._utils.array_api import (
    NUMPY,
    RowBlockWriter,
    check_fit_input,
    check_transform_input,
    get_namespace,
    move_fitted_arrays,
    numpy_dtype,
    row_blocks,
    to_numpy,
    wide_dtype,
)
from .._utils.compat import Interval, StrOptions, fit_context
from .._utils.doc_link import DocLinkMixin
from ._centres import CENTRE_SELECTORS, select_centres
from ._gamma import scale_gamma
from ._kernel_block import rbf_kernel_block, scaled_squared_distances
from ._row_keys import distinct_row_hashes, row_hashes

__all__ = ["NystroemDescription", "NystroemFeatures"]

#: The fitted arrays that follow a device fit's X to its device.
_FITTED_ARRAYS = ("components_", "normalization_", "eigenvalues_")

# Rows drawn (weight-proportionally, without replacement) for gamma="median".
_MEDIAN_ROWS = 1000


def _median_gamma(X, sample_weight, rng, distinct):
    r"""Return :math:`1 / \operatorname{median} \lVert x_i - x_j \rVert^2`.

    Over the pairs of up to 1,000 distinct rows drawn with probability ∝ weight
    (so integer weights equal repetitions), told apart by the fit's
    ``distinct`` rows (:func:`~sklmargin.features._row_keys.distinct_row_hashes`);
    1.0 when there is a single distinct row.
    """
    sample = select_centres(
        X, sample_weight, _MEDIAN_ROWS, 1.0, "uniform", rng, distinct=distinct
    )
    sample = sample.astype(np.float64)
    if sample.shape[0] < 2:
        return 1.0
    norms = np.einsum("ij,ij->i", sample, sample)
    distances = norms[:, None] + norms[None, :] - 2.0 * (sample @ sample.T)
    upper = distances[np.triu_indices(sample.shape[0], k=1)]
    median = float(np.median(np.maximum(upper, 0.0)))
    return 1.0 / median if median > 0 else 1.0


@dataclass(frozen=True)
class NystroemDescription:
    """``z(x) = exp(-|x' - c'|^2) @ normalization``, ``x' = (x - offset) sqrt(g)``.

    A fitted map's arrays, as a graph (ONNX) or a gradient reads them: the
    same arithmetic as :meth:`NystroemFeatures.transform` (centred on the
    centres' mean, scaled by ``sqrt(gamma)``, squared distances by a GEMM).
    """

    offset: np.ndarray  # (n_features,)
    root_gamma: float
    centres: np.ndarray  # (n_features, M): the scaled centres, transposed
    centre_squares: np.ndarray  # (M,)
    normalization: np.ndarray  # (M, n_components_)

    def forward(self, X):
        """Return ``z(X)`` of float64 NumPy rows (the maps' kernel block)."""
        scaled = (X - self.offset) * self.root_gamma
        return rbf_kernel_block(scaled, self.centres.T, 1.0) @ self.normalization

    def head_gradients(self, matrix, dtype):
        r"""Input gradients of logits read off ``z`` by a head ``matrix``.

        Returns ``(width, block)``: ``block(x, factors)`` gives, for rows
        ``x`` in ``dtype``, :math:`\partial f_c / \partial x` of shape
        ``(n, K, d)``, where ``factors(z) -> (alpha, beta)`` says
        :math:`\partial f_c / \partial z = \alpha_c A_{:, c} + \beta_c z`
        (``beta`` None: 0). Chained through :math:`z = k N`, then
        :math:`\partial k_i / \partial x = -2 \gamma k_i (x - c_i)`.
        ``width`` (the centres) bounds a block's memory.
        """
        normalization = self.normalization.astype(dtype)
        centres = self.centres.astype(dtype)  # (d, M), offset and sqrt(gamma) in
        centre_squares = self.centre_squares.astype(dtype)
        directions = normalization @ matrix  # (M, K): class directions in k

        def block(x, factors):
            scaled = (x - self.offset.astype(dtype)) * dtype.type(self.root_gamma)
            squared = (
                np.einsum("ij,ij->i", scaled, scaled)[:, None]
                + centre_squares
                - 2.0 * scaled @ centres
            )
            kernel = np.exp(-np.maximum(squared, 0.0))  # (n, M)
            features = kernel @ normalization
            alpha, beta = factors(features)
            # dlogit_c / dk = alpha_c (N A)_c + beta_c z N^T, per kernel entry
            chained = alpha[:, :, None] * directions.T[None, :, :]
            if beta is not None:
                back = (features @ normalization.T)[:, None, :]
                chained += beta[:, :, None] * back
            chained *= kernel[:, None, :]  # times k_i: (n, K, M)
            # dk_i/dx = -2 gamma k_i (x - c_i) = -2 sqrt(gamma) k_i (u - u_i)
            grad = chained.sum(axis=2)[:, :, None] * scaled[:, None, :]
            grad -= (chained @ centres.T).reshape(grad.shape)
            grad *= dtype.type(-2.0 * self.root_gamma)
            return grad

        return centres.shape[1], block


class NystroemFeatures(
    DocLinkMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    r"""Nyström approximation of the RBF kernel feature map.

    With centres :math:`c_1, \dots, c_M` (chosen among the training rows by
    ``centres``), kernel :math:`k(x, x') = \exp(-\gamma \lVert x - x' \rVert^2)`
    and the eigendecomposition of the jittered centre kernel matrix

    .. math::

        K_{CC} + \delta I = U \Lambda U^\top, \qquad
        \delta = M\, \varepsilon_{64}\, \max_j (K_{CC})_{jj} = M \varepsilon_{64},

    the map is

    .. math::

        z(x) = \Lambda_r^{-1/2} U_r^\top k_C(x), \qquad
        z(x)^\top z(x') = k_C(x)^\top K_{CC}^{+} k_C(x') \approx k(x, x'),

    where :math:`r` keeps the eigenvalues
    :math:`\lambda_j > \lambda_{\max} \cdot \max(10\, \varepsilon, M \varepsilon_{64})`
    (:math:`\varepsilon` of the input dtype). The others are *dropped*, not clipped:
    below :math:`M \varepsilon_{64} \lambda_{\max}` ``eigh`` cannot resolve them,
    and float32 rounding of :math:`k_C(x)` (about :math:`\varepsilon \sqrt{M}` in
    norm) would be amplified by :math:`\lambda_j^{-1/2}`; with the threshold a
    float32 feature carries an error of about :math:`10^{-4}` at most. The output
    width ``n_components_`` is therefore at most the number of centres. When the
    centres are all distinct training rows, :math:`z(x_i)^\top z(x_j) = k(x_i,
    x_j)` on the training set: the exact kernel machine (Williams & Seeger 2001).
    :math:`\lVert z(x) \rVert^2 \le k(x, x) = 1` (a Schur complement is positive
    semi-definite), so the features sit inside the unit ball, near its sphere for
    rows close to the centres.

    Squared distances come from one GEMM,
    :math:`\lVert x \rVert^2 + \lVert c \rVert^2 - 2 x^\top c`, clipped at 0, after
    subtracting the mean of the centres from both sides (it shrinks the norms and
    with them the cancellation in float32). ``transform`` works in row blocks: its
    only allocation of size :math:`n \times M` is the output, in the dtype of
    the input.

    Parameters
    ----------
    n_components : int, default=1000
        Number of centres :math:`M`; fewer when the training data have fewer
        distinct rows (then all of them are centres).
    gamma : {"scale", "median"} or float, default="scale"
        Kernel coefficient :math:`\gamma > 0`. ``"scale"`` is
        ``1 / (n_features * Var(X))`` as in ``SVC`` (variance of all entries,
        rows weighted by their sample weight; constant data give 1.0).
        ``"median"`` is ``1 / median(|x_i - x_j|^2)`` over pairs of up to 1,000
        distinct rows drawn with probability ∝ weight, so that the median pair
        has kernel value :math:`e^{-1}`.
    centres : {"uniform", "kmeans++", "kmeans", "rpcholesky"}, default="uniform"
        Centre selector (see ``sklmargin.features._centres``): a weighted draw without
        replacement, weighted k-means++ seeds, k-means++ followed by 5 weighted
        Lloyd steps (centres are then cluster means), or blocked randomly pivoted
        Cholesky (Chen et al. 2023). All choose among the distinct
        positive-weight rows, sorted, so integer weights equal repetitions and
        row order does not matter.
    random_state : int, RandomState instance or None, default=None
        Seeds the centre selection (and the rows of ``gamma="median"``).

    Attributes
    ----------
    components_ : ndarray of shape (n_centres, n_features_in_)
        The centres :math:`c_j`, in the training dtype.
    gamma_ : float
        The kernel coefficient used.
    normalization_ : ndarray of shape (n_centres, n_components_)
        :math:`U_r \Lambda_r^{-1/2}`; ``transform`` returns
        ``K(X, components_) @ normalization_``.
    eigenvalues_ : ndarray of shape (n_components_,)
        The kept eigenvalues :math:`\lambda_j` of :math:`K_{CC} + \delta I`, in
        decreasing order (float64).
    n_components_ : int
        Output width :math:`r`.
    n_features_in_ : int
        Number of features seen during :term:`fit`.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during :term:`fit`, when all are strings.

    See Also
    --------
    RandomFourierFeatures : Data-independent random features of the same kernel.
    sklearn.kernel_approximation.Nystroem : scikit-learn's map (float64 output,
        uniform centres, no sample weights).

    Notes
    -----
    Fit costs :math:`O(M^3 + M^2 d)` beyond the centre selection (uniform:
    :math:`O(n \log n)` for the distinct rows; k-means++: :math:`O(n M d)`;
    randomly pivoted Cholesky: :math:`O(n M^2)` and one :math:`n \times M` factor).
    Transform costs :math:`O(n M d + n M r)`. Sparse input is not supported.

    References
    ----------
    .. [1] C. K. I. Williams and M. Seeger, "Using the Nyström Method to Speed Up
       Kernel Machines", Advances in Neural Information Processing Systems 13,
       2001.
    .. [2] Y. Chen, E. N. Epperly, J. A. Tropp and R. J. Webber, "Randomly pivoted
       Cholesky: Practical approximation of a kernel matrix with few entry
       evaluations", Communications on Pure and Applied Mathematics, 2024.
       arXiv:2207.06503.
    .. [3] K. Zhang, I. W. Tsang and J. T. Kwok, "Improved Nyström Low-Rank
       Approximation and Error Analysis", ICML 2008.

    Examples
    --------
    >>> import numpy as np
    >>> from sklmargin import NystroemFeatures
    >>> X = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]])
    >>> Z = NystroemFeatures(gamma=0.5).fit_transform(X)
    >>> Z.shape
    (3, 3)
    >>> bool(abs(Z[0] @ Z[1] - np.exp(-0.5 * 2.0)) < 1e-10)
    True
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "gamma": [
            StrOptions({"scale", "median"}),
            Interval(Real, 0.0, None, closed="neither"),
        ],
        "centres": [StrOptions(set(CENTRE_SELECTORS))],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        n_components: int = 1000,
        gamma: str | float = "scale",
        centres: str = "uniform",
        random_state: int | np.random.RandomState | None = None,
    ):
        self.n_components = n_components
        self.gamma = gamma
        self.centres = centres
        self.random_state = random_state

    @fit_context(prefer_skip_nested_validation=True)
    def fit(
        self, X: ArrayLike, y: None = None, sample_weight: ArrayLike | None = None
    ) -> NystroemFeatures:
        """Resolve ``gamma``, choose the centres and factor their kernel matrix.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data: NumPy, or an array API array (torch, CuPy, ...,
            under ``array_api_dispatch``), whose host copy chooses the centres
            and whose device then holds the fitted arrays.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights: rows of zero weight are never centres, the
            selectors draw in proportion to weight, and ``gamma`` statistics are
            weighted. Integer weights are equivalent to repeating rows.

        Returns
        -------
        self : NystroemFeatures
            The fitted transformer.
        """
        X, sample_weight, xp, device = check_fit_input(self, X, sample_weight)
        # The centres are chosen among the distinct rows by their hashes:
        # torch and CuPy rows are hashed where they live (the slow part on
        # the host), then a device fit copies X to the host once (documented)
        # for gamma and the selector.
        hashes = row_hashes(X)
        X = to_numpy(X)
        rng = check_random_state(self.random_state)
        # The distinct rows, found once for gamma's sample and the centres.
        distinct = distinct_row_hashes(X, sample_weight, hashes)

        if self.gamma == "scale":
            self.gamma_ = scale_gamma(X, sample_weight)
        elif self.gamma == "median":
            self.gamma_ = _median_gamma(X, sample_weight, rng, distinct)
        else:
            self.gamma_ = float(self.gamma)

        centres = select_centres(
            X, sample_weight, int(self.n_components), self.gamma_, self.centres,
            rng, distinct=distinct,
        )  # fmt: skip
        self._fit_centres(centres, X.dtype)
        if xp is not NUMPY:
            move_fitted_arrays(self, _FITTED_ARRAYS, xp, device)
        return self

    def _fit_centres(self, centres, dtype):
        """Factor the kernel matrix of chosen ``centres``; set the fitted basis.

        The second half of :meth:`fit`, after ``gamma_`` is resolved and the
        centres are chosen; the Dask fit, which chooses the same centres from
        chunk statistics, calls it too.
        """
        self.components_ = np.ascontiguousarray(centres, dtype=dtype)

        # The M x M factorisation runs in float64 whatever the input dtype: it is
        # small, and its accuracy bounds that of every feature.
        centres64 = self.components_.astype(np.float64)
        centres64 -= centres64.mean(axis=0)
        kernel = rbf_kernel_block(centres64, centres64, self.gamma_)
        kernel = (kernel + kernel.T) / 2.0
        n_centres = kernel.shape[0]
        eps64 = np.finfo(np.float64).eps
        kernel.flat[:: n_centres + 1] += n_centres * eps64
        eigenvalues, eigenvectors = np.linalg.eigh(kernel)
        eigenvalues, eigenvectors = eigenvalues[::-1], eigenvectors[:, ::-1]
        threshold = eigenvalues[0] * max(10.0 * np.finfo(dtype).eps, n_centres * eps64)
        keep = eigenvalues > threshold
        eigenvalues, eigenvectors = eigenvalues[keep], eigenvectors[:, keep]
        # LAPACK fixes an eigenvector only up to sign: make the largest entry
        # positive so that the features do not depend on the library.
        largest = np.argmax(np.abs(eigenvectors), axis=0)
        signs = np.sign(eigenvectors[largest, np.arange(eigenvectors.shape[1])])
        eigenvectors *= signs
        self.eigenvalues_ = eigenvalues
        eigenvectors /= np.sqrt(eigenvalues)
        self.normalization_ = eigenvectors.astype(dtype, copy=False)
        self.n_components_ = int(eigenvalues.shape[0])
        return self

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Map ``X`` to the Nyström features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to transform: NumPy, or an array API array (under
            ``array_api_dispatch``) of the namespace and device of the fit's.

        Returns
        -------
        X_new : array of shape (n_samples, n_components_)
            float32 for float32 input, float64 otherwise; ``X``'s namespace
            and device.
        """
        X, xp, device = check_transform_input(self, X, "components_")
        dtype = X.dtype
        centres = xp.astype(self.components_, dtype)
        offset = xp.mean(centres, axis=0)
        centres = centres - offset
        normalization = xp.astype(self.normalization_, dtype, copy=False)
        out = RowBlockWriter(xp, (X.shape[0], normalization.shape[1]), dtype, device)
        row_bytes = numpy_dtype(dtype).itemsize * max(centres.shape[0], X.shape[1])
        for rows in row_blocks(X, row_bytes):
            kernel = rbf_kernel_block(X[rows, :] - offset, centres, self.gamma_)
            if isinstance(kernel, np.ndarray):  # NumPy leaf: no block-sized copy
                np.matmul(kernel, normalization, out=out.out[rows])
            else:
                out.write(rows, kernel @ normalization)
        return out.result()

    def describe(self):
        """Return the fitted map as a :class:`NystroemDescription` (float64)."""
        components = np.asarray(self.components_, dtype=np.float64)
        offset = components.mean(axis=0)
        root = float(np.sqrt(self.gamma_))
        centres = (components - offset) * root
        return NystroemDescription(
            offset=offset,
            root_gamma=root,
            centres=centres.T.copy(),
            centre_squares=np.einsum("ij,ij->i", centres, centres),
            normalization=np.asarray(self.normalization_, dtype=np.float64),
        )

    def nearest_centre_log_similarity(self, X):
        r"""Return the log-kernel to the nearest centre, :math:`-\gamma \min_c d^2`.

        Squared distances come from :math:`\lVert a \rVert^2 + \lVert c
        \rVert^2 - 2 a^\top c` in float64 (the widest float of ``X``'s
        device) after subtracting the centres' mean (as :meth:`transform`
        does), clipped at 0, by row blocks of bounded memory
        (:func:`~sklmargin.features._kernel_block.scaled_squared_distances`).
        Kept as a distance, not as :math:`\exp(\cdot)`: far rows stay ordered
        instead of underflowing to a tie at 0. The open-set score's distance
        term (:mod:`sklmargin.openset._scores`).

        Parameters
        ----------
        X : {ndarray, csr_matrix, array API array} of shape (n_samples, n_features)
            Rows as the map sees them, of the fit's namespace and device.

        Returns
        -------
        array of shape (n_samples,), values :math:`\le 0`
            In the namespace and on the device of ``X``.
        """
        xp, device = get_namespace(X)
        wide = wide_dtype(xp, device)
        centres = xp.astype(self.components_, wide)
        offset = xp.mean(centres, axis=0)
        centres = centres - offset
        nearest = []
        for rows in row_blocks(X, 8 * max(centres.shape[0], X.shape[1])):
            part = X[rows, :]
            part = xp.astype(part.toarray() if sp.issparse(part) else part, wide)
            distances = scaled_squared_distances(part - offset, centres, self.gamma_)
            nearest.append(xp.min(distances, axis=1))
        return -xp.concat(nearest) if len(nearest) != 1 else -nearest[0]

    @property
    def _n_features_out(self) -> int:
        """Output width, read by ``get_feature_names_out``."""
        return self.normalization_.shape[1]

    def __sklearn_tags__(self):
        """Declare float32/float64 preservation (dense input only)."""
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
