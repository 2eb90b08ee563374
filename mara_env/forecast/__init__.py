"""Loss forecasters: from a task's (work, loss) history to the distribution of its remaining work.

``mara_env.forecast.make(name, **kw)`` for ``name`` in :data:`FORECASTERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from mara_env.forecast.base import MAX_REMAINING, QUANTILES, Forecast, Forecaster, clean_history, unknown
from mara_env.forecast.dkf import DKFForecaster
from mara_env.forecast.flow import FlowForecaster
from mara_env.forecast.oracle import OracleForecaster
from mara_env.forecast.situ import SituForecaster
from mara_env.forecast.wls import WLSForecaster

FORECASTERS: dict[str, Callable[..., Forecaster]] = {
    "wls": WLSForecaster,
    "dkf": DKFForecaster,
    "oracle": OracleForecaster,
    "flow": FlowForecaster,  # imports torch when first made
    "flow_fixed": partial(FlowForecaster, fixed_noise=True),  # flow with common random numbers: deterministic forecasts
    "flow_situ": SituForecaster,  # flow refined by a head fitted on forecasts made in play
    "flow_situ_fixed": partial(SituForecaster, fixed_noise=True),
}


def make(name: str, **kwargs) -> Forecaster:
    """A new forecaster registered as ``name``; ``ValueError`` listing the names otherwise."""
    if name not in FORECASTERS:
        raise ValueError(f"forecaster must be one of {sorted(FORECASTERS)}, got {name!r}")
    return FORECASTERS[name](**kwargs)


__all__ = [
    "FORECASTERS",
    "MAX_REMAINING",
    "QUANTILES",
    "DKFForecaster",
    "FlowForecaster",
    "Forecast",
    "Forecaster",
    "OracleForecaster",
    "SituForecaster",
    "WLSForecaster",
    "clean_history",
    "make",
    "unknown",
]
