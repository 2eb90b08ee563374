"""The observation and the state: feature names, the layout, the decoder and the per-slot builder.

- :mod:`~mara_env.observation.features`: names, meanings and scales of every feature;
- :mod:`~mara_env.observation.layout`: :class:`ObservationLayout`, where each part lies in both vectors;
- :mod:`~mara_env.observation.decoded`: :func:`decode`, named views in physical units;
- :mod:`~mara_env.observation.table`: the incremental task-table builder;
- :mod:`~mara_env.observation.slot`: :class:`SlotObservations`, what every node sees during a slot.
"""

from mara_env.observation.decoded import DecodedObservation, MissingForecastsError, decode
from mara_env.observation.features import (
    BOUND,
    FEATURE_DOCS,
    FORECAST_FEATURES,
    GLOBAL_FEATURES,
    HEADER,
    NODE_FEATURES,
    ROW_FEATURES,
    SLOT_SCALE,
    WINDOW_FEATURES,
    WORK_SCALE,
    safe_log_ratio,
)
from mara_env.observation.layout import ObservationLayout, layout_of
from mara_env.observation.slot import SlotObservations
from mara_env.observation.table import TableBuilder

__all__ = [
    "BOUND",
    "FEATURE_DOCS",
    "FORECAST_FEATURES",
    "GLOBAL_FEATURES",
    "HEADER",
    "NODE_FEATURES",
    "ROW_FEATURES",
    "SLOT_SCALE",
    "WINDOW_FEATURES",
    "WORK_SCALE",
    "DecodedObservation",
    "MissingForecastsError",
    "ObservationLayout",
    "SlotObservations",
    "TableBuilder",
    "decode",
    "layout_of",
    "safe_log_ratio",
]
