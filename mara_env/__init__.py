"""mara_env: a PettingZoo environment in which cluster nodes cooperatively schedule training tasks.

Importing the package registers ``mara/ClusterScheduling-v0`` (AEC and parallel) with PettingZoo
(1.27 and later; with 1.24 to 1.26 use the module-level ``env``/``parallel_env``/``raw_env``), and
the centralised single-agent view ``mara/CentralScheduler-v0`` with Gymnasium::

    import mara_env, pettingzoo
    env = pettingzoo.make("aec", "mara/ClusterScheduling-v0", num_nodes=8)
"""

from mara_env.central import CENTRAL_ID, CentralSchedulerEnv
from mara_env.central import register as _register_central
from mara_env.env import ENV_ID, InvalidActionError, env, parallel_env, raw_env
from mara_env.observation import ObservationLayout, decode
from mara_env.registration import register_pettingzoo

__version__ = "0.1.0"

register_pettingzoo()
_register_central()

__all__ = [
    "CENTRAL_ID",
    "ENV_ID",
    "CentralSchedulerEnv",
    "InvalidActionError",
    "ObservationLayout",
    "decode",
    "env",
    "parallel_env",
    "raw_env",
]
