"""Train SB3 PPO on the parallel env through SuperSuit vector envs (2 processes), then rank it.

    python examples/sb3_supersuit_ppo.py --timesteps 50000 --seeds 10

``parallel_env`` -> a flat-observation view -> ``pettingzoo_env_to_vec_env_v1`` (every node is one
entry of a vector env, sharing one policy) -> ``concat_vec_envs_v1`` with 2 CPU processes -> PPO.

What this path cannot do: SB3's PPO has no action masks, and SuperSuit's vector envs pass only the
observation, so the policy trains without masks; the env therefore runs with
``invalid_action="idle"`` (a masked choice is played as idle and counted in ``info``), which
wastes the turn. SuperSuit 3.11's process vector env has no ``seed()``, so the training episodes are
not seeded (SB3's own generators are). In the parallel env every node observes the start of the slot, so the policy also
cannot see what the other nodes chose (no autoregressive signal). For masks, use
``examples/sb3_maskable_ppo.py``. The evaluation wraps the policy with ``SB3Scheduler``, which applies
the masks at decision time.
"""

from __future__ import annotations

import argparse

from gymnasium import spaces
from pettingzoo.utils import BaseParallelWrapper

import mara_agents
import mara_env
from mara_agents.cli import format_table
from mara_agents.sb3 import SB3Scheduler


class FlatObservations(BaseParallelWrapper):
    """The parallel env with the observation vector only (SuperSuit concatenates Box spaces)."""

    def observation_space(self, agent: str) -> spaces.Box:
        return self.env.observation_space(agent)["observation"]

    def reset(self, seed=None, options=None):
        obs, infos = self.env.reset(seed=seed, options=options)
        return {a: o["observation"] for a, o in obs.items()}, infos

    def step(self, actions):
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        return {a: o["observation"] for a, o in obs.items()}, rewards, terms, truncs, infos


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=50_000, help="node decisions to train on")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--num-nodes", type=int, default=4)
    parser.add_argument("--horizon", type=int, default=200)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()

    import supersuit as ss
    from stable_baselines3 import PPO
    from stable_baselines3.common.utils import set_random_seed

    env_kwargs = {"num_nodes": args.num_nodes, "horizon": args.horizon, "forecaster": "none", "shaping": True}
    par = FlatObservations(mara_env.parallel_env(invalid_action="idle", **env_kwargs))
    vec = ss.pettingzoo_env_to_vec_env_v1(par)
    vec = ss.concat_vec_envs_v1(vec, args.processes, num_cpus=args.processes, base_class="stable_baselines3")
    try:
        # SuperSuit 3.11's process vector env has no seed(), so PPO(seed=...) and reset(seed=...)
        # fail on it: SB3's own generators are seeded, the worker envs' episodes are not.
        set_random_seed(0)
        model = PPO("MlpPolicy", vec, n_steps=128, batch_size=64, device="cpu")
        model.learn(total_timesteps=args.timesteps)
    finally:
        vec.close()  # the worker processes must not outlive a failure

    eval_kwargs = {"num_nodes": args.num_nodes, "horizon": args.horizon, "forecaster": "none"}
    seeds = range(args.seeds)
    summaries = {
        "supersuit_ppo": mara_agents.summarize(
            mara_agents.evaluate(SB3Scheduler(model, trained_env=env_kwargs), seeds, **eval_kwargs)
        )
    }
    for name in ("random", "edf"):
        summaries[name] = mara_agents.summarize(mara_agents.evaluate(name, seeds, **eval_kwargs))
    print(format_table(summaries))
    print(f"trained on {args.timesteps} node decisions; masked choices while training were played as idle")


if __name__ == "__main__":
    main()
