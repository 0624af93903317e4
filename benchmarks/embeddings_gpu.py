"""The linear probe (and the kernel machine) on a GPU: NumPy against torch cuda.

Frozen embeddings often stay in torch tensors on the GPU that computed them.
With scikit-learn's array API dispatch our classifiers fit and predict on the
tensor's device; only the parameter and gradient vectors go to SciPy's L-BFGS
on the host at each iteration (``docs/array_api.rst``). This script measures
what that buys, on each ``NAME.npz`` given (``X_train, y_train, X_test,
y_test``, rows as the encoder gave them) and on a synthetic embedding set
large enough for the GPU to matter (``--synthetic N``: ``N`` unit rows of 512
dimensions, 100 classes, labelled by a random linear teacher):

* ``MarginSoftmaxClassifier()`` and ``MarginSoftmaxClassifierCV()`` fitted on
  NumPy float32 rows with one BLAS thread, and on the same rows as a cuda
  tensor (float32);
* ``LogisticRegressionCV(Cs=10, cv=3)`` on NumPy, one thread, for reference
  (up to 20,000 training rows);
* with ``--kernel-sets NAMES`` (the data sets of ``kernel_targets.py``:
  ``NAME.npz`` in ``--data`` or ``synthetic``), ``KernelMarginSoftmaxClassifier
  (random_state=0)`` and ``KernelMarginSoftmaxClassifierCV(random_state=0)`` on
  the rows standardised by a ``StandardScaler`` fitted on the training rows
  (NumPy, float32 after it), NumPy against cuda as above (no peer).

Per fit: wall seconds (cuda work synchronised before the clock stops),
CPU seconds of the process (``time.process_time``), L-BFGS iterations (for the
CV estimator those of the refit), test accuracy, and the share of test labels
on which the cuda model and the NumPy model disagree. Each fit is timed
``--repeats`` times after one untimed warm-up on cuda (the first call builds
cuBLAS handles and kernels); the fastest is reported.

Usage (on a machine with a CUDA GPU and torch; the rows of the development
data folder)::

    python benchmarks/embeddings_gpu.py --data ../shared/data \\
        --datasets clip_vitb32_caltech101,clip_vitb32_ucf101_midframes \\
        --synthetic 100000 [--repeats 3]
    python benchmarks/embeddings_gpu.py --data ../shared/data \\
        --kernel-sets letter,synthetic --repeats 1

Without a visible GPU the cuda rows are skipped with a printed line.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("SCIPY_ARRAY_API", "1")  # scikit-learn's dispatch needs it

import argparse  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from _common import (  # noqa: E402
    add_data_argument,
    command_line,
    device_timed,
    machine,
    now,
    versions,
)
from sklearn.linear_model import LogisticRegressionCV  # noqa: E402

from sklmargin import (  # noqa: E402
    KernelMarginSoftmaxClassifier,
    KernelMarginSoftmaxClassifierCV,
    MarginSoftmaxClassifier,
    MarginSoftmaxClassifierCV,
)
from sklmargin.compare.datasets import load_npz  # noqa: E402

MODELS = {
    "ours": MarginSoftmaxClassifier,
    "ours_cv": MarginSoftmaxClassifierCV,
}
KERNEL_MODELS = {
    "kernel": lambda: KernelMarginSoftmaxClassifier(random_state=0),
    "kernel_cv": lambda: KernelMarginSoftmaxClassifierCV(random_state=0),
}


def kernel_set(data_dir, name):
    """A kernel benchmark split, standardised on its training rows, float32."""
    from label_stability import standardised  # the same rows as its fits

    return standardised(data_dir, name)


def synthetic(n, d=512, n_classes=100, noise=0.2, seed=0):
    """``n`` training and ``n // 4`` test unit rows labelled by a random teacher.

    Rows: Gaussian, normalised to unit length (as CLIP's). Labels: the argmax
    over classes of a random linear teacher's scores plus Gumbel noise of
    scale ``noise`` (relative to the scores' spread), so that class regions
    are cones, not blobs: the class-mean start is far from the optimum and
    L-BFGS runs tens of iterations, as on real embeddings.
    """
    rng = np.random.default_rng(seed)
    teacher = rng.standard_normal((d, n_classes))

    def draw(m):
        X = rng.standard_normal((m, d))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        scores = X @ teacher
        scores += noise * scores.std() * rng.gumbel(size=scores.shape)
        return X.astype(np.float32), np.argmax(scores, axis=1)

    (X_train, y_train), (X_test, y_test) = draw(n), draw(n // 4)
    return X_train, y_train, X_test, y_test


def _iterations(model):
    inner = getattr(model, "estimator_", None) or model
    return int(np.max(inner.n_iter_))


def run(name, data, repeats, torch, models=MODELS, peer=True):
    X_train, y_train, X_test, y_test = data
    print(
        f"{name}: {X_train.shape[0]} train / {X_test.shape[0]} test rows, "
        f"{X_train.shape[1]} features, {np.unique(y_train).size} classes",
        flush=True,
    )
    cuda = torch is not None and torch.cuda.is_available()
    for model_name, make in models.items():
        reference = None
        backends = ["numpy", "cuda"] if cuda else ["numpy"]
        for backend in backends:
            if backend == "numpy":
                X, y, Xt, dispatch = X_train, y_train, X_test, False
            else:
                X = torch.asarray(X_train, device="cuda")
                y = torch.asarray(y_train, device="cuda")
                Xt = torch.asarray(X_test, device="cuda")
                dispatch = True
            walls, cpus = [], []
            with sklearn.config_context(array_api_dispatch=dispatch):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if backend == "cuda":  # warm-up: cuBLAS handles, kernels
                        make().fit(X, y)
                    for _ in range(repeats):
                        model, wall, cpu = device_timed(
                            lambda make=make, X=X, y=y: make().fit(X, y), torch, backend
                        )
                        walls.append(wall)
                        cpus.append(cpu)
                    predicted = model.predict(Xt)
            if backend == "cuda":
                predicted = predicted.cpu().numpy()
            accuracy = float(np.mean(predicted == y_test))
            disagree = "" if reference is None else (
                f"  labels differing from NumPy {np.mean(predicted != reference):.2%}"
            )  # fmt: skip
            reference = predicted if reference is None else reference
            print(
                f"  {model_name:8s} {backend:6s} acc {accuracy:.4f}  wall "
                f"{min(walls):7.3f} s  cpu {min(cpus):7.3f} s  L-BFGS iterations "
                f"{_iterations(model)}{disagree}",
                flush=True,
            )
        if not cuda:
            print(f"  {model_name:8s} cuda   skipped: no CUDA device visible to torch")
    if not peer:
        return
    if X_train.shape[0] > 20_000:  # minutes of liblinear-free lbfgs on one core
        print(f"  {'lrcv':8s} numpy  skipped above 20,000 training rows")
        return
    with warnings.catch_warnings():  # scikit-learn's FutureWarnings of 1.9
        warnings.simplefilter("ignore")
        model, wall, cpu = device_timed(
            lambda: LogisticRegressionCV(Cs=10, cv=3).fit(X_train, y_train)
        )
    accuracy = float(np.mean(model.predict(X_test) == y_test))
    print(
        f"  {'lrcv':8s} {'numpy':6s} acc {accuracy:.4f}  wall {wall:7.3f} s  "
        f"cpu {cpu:7.3f} s",
        flush=True,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--datasets", default="")
    parser.add_argument("--synthetic", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kernel-sets", default="")
    args = parser.parse_args()
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    print(f"command: {command_line()}")
    print(f"{now()}; {machine()}; {versions()}")
    if torch is not None and torch.cuda.is_available():
        print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    for name in filter(None, args.datasets.split(",")):
        data = load_npz(name, os.path.join(args.data, f"{name}.npz"))
        run(name, (data.X_train, data.y_train, data.X_test, data.y_test),
            args.repeats, torch)  # fmt: skip
    if args.synthetic:
        run(f"synthetic {args.synthetic} x 512", synthetic(args.synthetic),
            args.repeats, torch)  # fmt: skip
    for name in filter(None, args.kernel_sets.split(",")):
        run(name, kernel_set(args.data, name), args.repeats, torch,
            KERNEL_MODELS, peer=False)  # fmt: skip


if __name__ == "__main__":
    main()
