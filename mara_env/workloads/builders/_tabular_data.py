"""Offline tabular data sets for the ``tabular`` and ``gbt`` banks (scikit-learn's bundled sets and
generators only; nothing is downloaded), standardised and split once by a fixed seed (75% / 25%)."""

from __future__ import annotations

import functools

import numpy as np

#: name -> number of classes (0 = regression)
DATASETS = {
    "iris": 3,
    "wine": 3,
    "breast_cancer": 2,
    "digits": 10,
    "diabetes": 0,
    "friedman1": 0,
    "hastie": 2,
    "moons": 2,
}
SPLIT_SEED = 0


def _raw(name: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets

    loaders = {
        "iris": datasets.load_iris,
        "wine": datasets.load_wine,
        "breast_cancer": datasets.load_breast_cancer,
        "digits": datasets.load_digits,
        "diabetes": datasets.load_diabetes,
    }
    if name in loaders:
        data = loaders[name]()
        return data.data, data.target
    if name == "friedman1":
        return datasets.make_friedman1(n_samples=1500, noise=1.0, random_state=3)
    if name == "hastie":
        x, y = datasets.make_hastie_10_2(n_samples=2000, random_state=4)
        return x, (y > 0).astype(int)
    if name == "moons":
        return datasets.make_moons(n_samples=1500, noise=0.3, random_state=5)
    raise ValueError(f"dataset must be one of {sorted(DATASETS)}, got {name!r}")


@functools.cache
def dataset(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_train, y_train, x_val, y_val)``: float32 features standardised on the training part;
    regression targets standardised too (so the val MSE of predicting the mean is about 1)."""
    x, y = _raw(name)
    order = np.random.default_rng(SPLIT_SEED).permutation(len(y))
    cut = int(0.75 * len(y))
    tr, va = order[:cut], order[cut:]
    mean, sd = x[tr].mean(axis=0), x[tr].std(axis=0) + 1e-8
    x = ((x - mean) / sd).astype(np.float32)
    regression = DATASETS[name] == 0
    y = ((y - y[tr].mean()) / y[tr].std()).astype(np.float32) if regression else y.astype(np.int64)
    return x[tr], y[tr], x[va], y[va]
