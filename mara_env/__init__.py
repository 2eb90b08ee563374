"""mara_env: a PettingZoo environment in which cluster nodes cooperatively schedule training tasks.

Importing the package registers ``mara/ClusterScheduling-v0`` (AEC and parallel) with PettingZoo::

    import mara_env, pettingzoo
    env = pettingzoo.make("aec", "mara/ClusterScheduling-v0", num_nodes=8)
"""

from mara_env.env import ENV_ID, InvalidActionError, env, parallel_env, raw_env
from mara_env.observation import ObservationLayout, decode

__version__ = "0.1.0"

__all__ = ["ENV_ID", "InvalidActionError", "ObservationLayout", "decode", "env", "parallel_env", "raw_env"]
