"""Registration of the env with PettingZoo's registry, where the installed PettingZoo has one.

``pettingzoo.register`` / ``pettingzoo.make`` arrived in PettingZoo 1.27; with 1.24 to 1.26 the
package still imports and the module-level API (``mara_env.env``, ``parallel_env``, ``raw_env``)
works, only ``pettingzoo.make("aec", "mara/ClusterScheduling-v0")`` is unavailable.
"""

from __future__ import annotations

import pettingzoo

from mara_env.env import ENV_ID


def register_pettingzoo() -> bool:
    """Register ``ENV_ID`` (AEC and parallel) once; ``False`` if this PettingZoo has no registry."""
    register = getattr(pettingzoo, "register", None)
    if register is None:
        return False
    if ENV_ID not in pettingzoo.aec_registry:
        register("aec", ENV_ID, entry_point="mara_env.env:env")
    if ENV_ID not in pettingzoo.parallel_registry:
        register("parallel", ENV_ID, entry_point="mara_env.env:parallel_env")
    return True
