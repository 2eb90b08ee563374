"""The ``gbt`` bank: gradient-boosted trees (scikit-learn's HistGradientBoosting), staged validation.

The same offline data sets as the ``tabular`` bank. One boosting run per configuration, without
early stopping; the curve is the validation score after every ``every`` boosting iterations, read
with ``staged_predict`` / ``staged_predict_proba``. Runs vary the learning rate (shrinkage), leaf
count, depth, minimum leaf size, L2 regularisation, feature subsampling and seed. The recorded
metric is the held-out misclassification rate plus 0.01 (classification) or the held-out MSE of the
standardised target (regression): an error-rate curve with its plateaus, as a scheduler sees it.
"""

from __future__ import annotations

import numpy as np

from mara_env.workloads.builders._common import bank_grid
from mara_env.workloads.builders._tabular_data import DATASETS, dataset

LOSS = (
    "gbt: 0.01 + held-out error rate (classification) or held-out MSE of the standardised target "
    "(regression) of a HistGradientBoosting model after every `every` boosting iterations"
)
FLOOR, CAP = 1e-3, 50.0
AXES = {
    "data": tuple(DATASETS),
    "lr": (0.01, 0.03, 0.1, 0.3),
    "leaves": (4, 15, 31),
    "depth": (2, 4, 0),
    "min_leaf": (5, 20),
    "l2": (0.0, 1.0),
    "features": (0.5, 1.0),
    "seed": (0, 1, 2),
}
PER_SIZE = {"full": {"iterations": 200, "every": 4}, "tiny": {"iterations": 8, "every": 2}}


def grid(size: str) -> list[dict]:
    """``full``: 175 sampled runs; ``tiny``: 2 short ones (CI)."""
    return bank_grid(size, "gbt/hgb", AXES, 606, PER_SIZE, family=None)


def run(config: dict) -> dict:
    """Fit the boosted model of ``config`` once (deterministic) and return its staged validation curve."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):  # one OpenMP thread: builds run one process per core
        return _fit(config)


def _fit(config: dict) -> dict:
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    classes = DATASETS[config["data"]]
    x_tr, y_tr, x_va, y_va = dataset(config["data"])
    params = {
        "learning_rate": config["lr"],
        "max_iter": config["iterations"],
        "max_leaf_nodes": config["leaves"],
        "max_depth": config["depth"] or None,
        "min_samples_leaf": config["min_leaf"],
        "l2_regularization": config["l2"],
        "max_features": config["features"],
        "early_stopping": False,
        "random_state": config["seed"],
    }
    every = config["every"]
    if classes:
        model = HistGradientBoostingClassifier(**params).fit(x_tr, y_tr)
        staged = model.staged_predict(x_va)
        values = [0.01 + float(np.mean(p != y_va)) for i, p in enumerate(staged) if (i + 1) % every == 0]
    else:
        model = HistGradientBoostingRegressor(**params).fit(x_tr, y_tr)
        staged = model.staged_predict(x_va)
        values = [float(np.mean((p - y_va) ** 2)) for i, p in enumerate(staged) if (i + 1) % every == 0]
    steps = every * np.arange(1, len(values) + 1, dtype=float)
    return {"steps": steps, "losses": np.clip(values, FLOOR, CAP), "x_unit": "boosting_iteration"}
