"""The PettingZoo AEC adapter over the simulator core, and its registration.

Nodes ``node_0 .. node_{M-1}`` act one after another within a slot; the world advances only when the
last node of the cycle has acted (the pattern of PettingZoo's ``sisl/pursuit``). Each node sees how
many earlier nodes chose each task row this slot, which makes the joint decision autoregressive.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from gymnasium import logger, spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import parallel_wrapper_fn

from mara_env import forecast
from mara_env.core import IDLE, FaultModel, SimConfig, Simulator, SlotResult
from mara_env.core.config import is_int, require
from mara_env.forecast import Forecaster
from mara_env.forecast.features import ForecastFeatures
from mara_env.observation import (
    BOUND,
    GLOBAL_FEATURES,
    HEADER,
    NODE_FEATURES,
    ObservationLayout,
    TableBuilder,
)
from mara_env.render import ansi_table, gantt_chart
from mara_env.workloads import (
    ArrivalProcess,
    DeadlineModel,
    arrival_rate,
    generate_episode,
    make_arrivals,
    make_workload,
    resolve_load,
    workload_mean_work,
)

ENV_ID = "mara/ClusterScheduling-v0"
INVALID_ACTION_MODES = ("raise", "idle")


def forecast_features(forecaster: str | Forecaster | None, max_tasks: int) -> ForecastFeatures | None:
    """The per-slot forecast feature builder for an env's ``forecaster`` setting (None for ``"none"``)."""
    if forecaster is None or forecaster == "none":
        return None
    if isinstance(forecaster, str):
        if forecaster not in forecast.FORECASTERS:
            allowed = ["none", *sorted(forecast.FORECASTERS)]
            raise ValueError(f"forecaster must be one of {allowed} or a forecaster object, got {forecaster!r}")
        forecaster = forecast.make(forecaster)
    elif not callable(getattr(forecaster, "predict", None)):
        raise ValueError(f"forecaster must be a name or an object with predict(), got {forecaster!r}")
    return ForecastFeatures(forecaster, max_tasks)


class InvalidActionError(ValueError):
    """An action outside ``[0, K_max]`` or masked for the acting node."""


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's naming convention
    """Cooperative scheduling of training tasks on a cluster of discrete nodes.

    Parameters
    ----------
    num_nodes:
        Nodes (agents) ``M``, >= 1.
    max_tasks:
        Task-table rows ``K_max``, >= 1; the action space is ``Discrete(K_max + 1)``.
    horizon:
        Slots per episode, >= 1.
    workload:
        Registered workload name (see ``mara_env.workloads.WORKLOADS``).
    load:
        Offered load: a preset name (``train``, ``heavy``, ``extreme``) or a number > 0.
    shaping:
        Add the potential-based progress term to the team reward.
    forecaster:
        Forecaster filling the forecast features: ``"flow"`` (default), ``"none"`` (zeros), a name in
        ``mara_env.forecast.FORECASTERS`` (``wls``, ``dkf``, ``flow``, ``oracle``) or a forecaster object.
    max_cycles:
        Truncate after this many slots (``None``: the horizon).
    render_mode:
        ``None``, ``"ansi"`` or ``"rgb_array"``.
    history_window:
        ``H``, (work, loss) points per row in the observation, >= 1.
    switch_cost:
        Fraction of a slot lost by a node that switches task, in ``[0, 1)``.
    node_speeds:
        Per-node relative speeds (``None``: all 1.0).
    curve_split:
        Which split of the workload's curve bank tasks come from: ``"train"`` (default; what
        learners may see), ``"val"`` or ``"test"`` (what ``mara_agents.evaluate`` uses).
        ``synthetic`` draws fresh curves whatever the split.
    arrivals:
        ``"poisson"`` (default), ``"bursty"`` (Markov-modulated), a path to a ``.csv`` trace, or an
        arrival-process object (see ``mara_env.workloads.arrivals``).
    faults:
        ``None`` (default), ``{"mtbf": slots, "mttr": slots}`` (exponential up and down times per node)
        or ``{"schedule": [(node, first_slot, last_slot), ...]}``; a down node may only idle.
    invalid_action:
        ``"raise"`` (default): a masked or out-of-range action raises :class:`InvalidActionError`
        and changes nothing; ``"idle"``: it is played as idle and counted in ``infos``
        (for learners that cannot apply masks).
    """

    metadata = {
        "name": "mara_cluster_scheduling_v0",
        "render_modes": ["ansi", "rgb_array"],
        "is_parallelizable": True,
        "render_fps": 4,
    }

    def __init__(
        self,
        num_nodes: int = 8,
        max_tasks: int = 16,
        horizon: int = 300,
        workload: str = "synthetic",
        load: str | float = "train",
        shaping: bool = False,
        forecaster: str | Forecaster | None = "flow",
        max_cycles: int | None = None,
        render_mode: str | None = None,
        history_window: int = 8,
        switch_cost: float = 0.1,
        node_speeds: list[float] | None = None,
        curve_split: str = "train",
        arrivals: str | ArrivalProcess = "poisson",
        faults: dict | FaultModel | None = None,
        invalid_action: str = "raise",
    ) -> None:
        super().__init__()
        self.sim_config = SimConfig(num_nodes, max_tasks, horizon, switch_cost, node_speeds)
        require(is_int(history_window) and history_window >= 1, "history_window", "an integer >= 1", history_window)
        require(
            max_cycles is None or (is_int(max_cycles) and max_cycles >= 1),
            "max_cycles",
            "None or an integer >= 1",
            max_cycles,
        )
        require(isinstance(shaping, bool), "shaping", "True or False", shaping)
        require(
            invalid_action in INVALID_ACTION_MODES, "invalid_action", f"one of {INVALID_ACTION_MODES}", invalid_action
        )
        require(
            render_mode is None or render_mode in self.metadata["render_modes"],
            "render_mode",
            f"None or one of {self.metadata['render_modes']}",
            render_mode,
        )
        self.workload_name = workload
        self.workload = make_workload(workload, curve_split)
        self.curve_split = curve_split
        self.arrivals = make_arrivals(arrivals)
        self.faults = FaultModel.from_config(faults)
        self.load = resolve_load(load)
        self.shaping = shaping
        self.max_cycles = max_cycles if max_cycles is not None else horizon
        self.render_mode = render_mode
        self.invalid_action = invalid_action
        self.layout = ObservationLayout(max_tasks, history_window, num_nodes)
        self._forecasts = forecast_features(forecaster, max_tasks)
        self._tables = TableBuilder(self.layout)
        self._header = self.layout.header()
        self._chosen_col = self.layout.row_index["chosen_now"]
        self._idle_mask = np.eye(1, max_tasks + 1, dtype=np.int8)[0]
        self.deadlines = DeadlineModel()
        self.rate = arrival_rate(self.load, float(self.sim_config.speeds().sum()), workload_mean_work(workload))

        self.possible_agents = [f"node_{i}" for i in range(num_nodes)]
        self._agent_index = {a: i for i, a in enumerate(self.possible_agents)}
        obs_box = spaces.Box(-BOUND, BOUND, shape=(self.layout.size,), dtype=np.float32)
        mask_box = spaces.Box(0, 1, shape=(max_tasks + 1,), dtype=np.int8)
        obs_space = spaces.Dict({"observation": obs_box, "action_mask": mask_box})
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(max_tasks + 1) for a in self.possible_agents}
        state_size = (
            len(HEADER) + len(GLOBAL_FEATURES) + num_nodes * len(NODE_FEATURES) + max_tasks * self.layout.row_size
        )
        self.state_space = spaces.Box(-BOUND, BOUND, shape=(state_size,), dtype=np.float32)
        self._np_random: np.random.Generator | None = None
        self.sim: Simulator | None = None

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ episode
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        if seed is not None or self._np_random is None:
            self._np_random = np.random.default_rng(seed)
        tasks = generate_episode(
            self.workload, self._np_random, self.rate, self.sim_config.horizon, self.deadlines, self.arrivals
        )
        self.sim = Simulator(self.sim_config, tasks)
        cfg = self.sim_config
        self._node_timeline = self.faults.timeline(self._np_random, cfg.num_nodes, cfg.horizon) if self.faults else None
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self._cycles = 0
        self._tables.reset()
        if self._forecasts:
            self._forecasts.reset()
        self._invalid_actions = 0
        self._gantt: list[np.ndarray] = []
        self._potential = self.sim.potential()
        self._begin_slot()

    def _begin_slot(self) -> None:
        """Fresh per-slot buffers: the task table, the masks and the nodes' pending choices."""
        sim = self.sim
        if self._node_timeline is not None:
            for node, up in enumerate(self._node_timeline[sim.slot].tolist()):
                sim.set_node_up(node, up)
        self._turn = 0
        self.agent_selection = self.agents[0]
        self._assignment = np.full(self.sim_config.num_nodes, IDLE, dtype=np.int64)
        forecasts = self._forecasts.features(sim) if self._forecasts else None
        self._table = self._tables.build(sim, forecasts)
        task_mask = np.zeros(self.layout.max_tasks + 1, dtype=np.int8)
        task_mask[0] = 1
        for row, task in enumerate(sim.rows):
            if task is not None and task.spec.deadline >= sim.slot:
                task_mask[row + 1] = 1
        self._task_mask = task_mask
        k, m = self.layout.max_tasks, self.sim_config.num_nodes
        self._global = np.array(
            [
                sim.slot / self.sim_config.horizon,
                1.0,
                sim.node_up.sum() / m,
                (task_mask[1:].sum()) / k,
                len(sim.queue) / k,
            ],
            dtype=np.float32,
        )
        speeds = self.sim.speeds
        self._nodes = np.stack([np.arange(m) / m, speeds, sim.node_up, (sim.last_row + 1) / k], axis=1).astype(
            np.float32
        )

    # ------------------------------------------------------------------ views
    def action_mask(self, agent: str) -> np.ndarray:
        """Allowed actions of ``agent`` now: idle always; occupied rows when the node is up."""
        node = self._agent_index[agent]
        return (self._task_mask if self.sim.node_up[node] else self._idle_mask).copy()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        node = self._agent_index[agent]
        self._global[1] = (self.sim_config.num_nodes - self._turn) / self.sim_config.num_nodes
        vector = np.concatenate((self._header, self._nodes[node], self._global, self._table.ravel()))
        return {"observation": vector, "action_mask": self.action_mask(agent)}

    def state(self) -> np.ndarray:
        """Global state for centralised critics: header, globals, every node's features, the table."""
        self._global[1] = (self.sim_config.num_nodes - self._turn) / self.sim_config.num_nodes
        return np.concatenate((self._header, self._global, self._nodes.ravel(), self._table.ravel()))

    # ------------------------------------------------------------------ dynamics
    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        action = self._checked_action(agent, action)
        self._cumulative_rewards[agent] = 0.0
        if action > 0:
            self._assignment[self._turn] = action - 1
            self._table[action - 1, self._chosen_col] += 1.0 / self.sim_config.num_nodes
        if self._turn == self.sim_config.num_nodes - 1:
            self._end_slot()
        else:
            self._clear_rewards()
            self._turn += 1
            self.agent_selection = self.agents[self._turn]
        self._accumulate_rewards()

    def _checked_action(self, agent: str, action: Any) -> int:
        k = self.layout.max_tasks
        try:
            value = int(action)
            exact = value == action
        except (TypeError, ValueError):
            exact = False
        if not exact or not 0 <= value <= k:
            return self._reject(agent, action, f"is not an integer in [0, {k}]")
        allowed = self._task_mask if self.sim.node_up[self._turn] else self._idle_mask
        if not allowed[value]:
            why = "the node is down" if not self.sim.node_up[self._turn] else f"row {value - 1} is empty"
            return self._reject(agent, action, f"is masked ({why})")
        return value

    def _reject(self, agent: str, action: Any, why: str) -> int:
        if self.invalid_action == "idle":
            self._invalid_actions += 1
            return 0
        allowed = np.flatnonzero(self.action_mask(agent)).tolist()
        raise InvalidActionError(
            f"{agent} at slot {self.sim.slot}: action {action!r} {why}; allowed actions: {allowed}"
        )

    def _end_slot(self) -> None:
        sim = self.sim
        result = sim.step(self._assignment)
        self._cycles += 1
        self._gantt.append(np.where(sim.node_up, sim.last_task, -2))
        terminated = sim.done
        truncated = not terminated and self._cycles >= self.max_cycles
        reward = self._team_reward(result, final=terminated or truncated)
        info = self._slot_info(result, reward, final=terminated or truncated)
        for a in self.agents:
            self.rewards[a] = reward
            self.infos[a] = dict(info)
            self.terminations[a] = terminated
            self.truncations[a] = truncated
        if not (terminated or truncated):
            self._begin_slot()
        else:
            self._turn = 0
            self.agent_selection = self.agents[0]

    def _team_reward(self, result: SlotResult, final: bool) -> float:
        """Completions this slot, plus ``Phi(s') - Phi(s)`` when shaping (``Phi`` = 0 at the end)."""
        completions = float(len(result.completed))
        new_potential = 0.0 if final else self.sim.potential()
        shaping_term = new_potential - self._potential
        self._potential = new_potential
        return completions + shaping_term if self.shaping else completions

    def _slot_info(self, result: SlotResult, reward: float, final: bool) -> dict[str, Any]:
        info: dict[str, Any] = {
            "slot": result.slot,
            "completions": len(result.completed),
            "expirations": len(result.expired),
            "shaped_reward": reward,
            "invalid_actions": self._invalid_actions,
        }
        if final:
            info["metrics"] = self.sim.metrics()
        return info

    # ------------------------------------------------------------------ render
    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'.")
            return None
        if self.render_mode == "ansi":
            return ansi_table(self.sim)
        return gantt_chart(self._gantt, self.sim_config.num_nodes, self.sim_config.horizon)

    def close(self) -> None:
        pass


def live_turns(aec: AECEnv) -> Iterator[str]:
    """The acting agent of every live turn until the episode ends; the caller steps it.

    Finished agents' turns are stepped with ``None`` here (PettingZoo's dead steps).
    """
    while aec.agents:
        agent = aec.agent_selection
        if aec.terminations[agent] or aec.truncations[agent]:
            aec.step(None)
            continue
        yield agent


def env(**kwargs: Any) -> AECEnv:
    """The AEC environment with PettingZoo's order-enforcing wrapper (misuse before reset raises)."""
    return wrappers.OrderEnforcingWrapper(raw_env(**kwargs))


parallel_env = parallel_wrapper_fn(env)
