"""The PettingZoo AEC adapter over the simulator core.

Nodes ``node_0 .. node_{M-1}`` act one after another within a slot; the world advances only when the
last node of the cycle has acted (the pattern of PettingZoo's ``sisl/pursuit``). What a node sees is
built by :class:`~mara_env.observation.SlotObservations` (simulator side, no PettingZoo); this module
only maps agents to nodes, checks actions, hands out rewards and infos, and renders. Settings are
validated by :class:`~mara_env.config.EnvConfig`, where their defaults live.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
from gymnasium import logger, spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import parallel_wrapper_fn

from mara_env import forecast
from mara_env.config import DEFAULTS, EnvConfig
from mara_env.core import IDLE, FaultModel, Simulator, SlotResult
from mara_env.forecast import Forecaster
from mara_env.forecast.features import ForecastFeatures
from mara_env.forecast.in_episode import InEpisodeCalibration
from mara_env.observation import BOUND, ObservationLayout, SlotObservations
from mara_env.render import ansi_table, gantt_chart
from mara_env.workloads import (
    DeadlineModel,
    arrival_rate,
    generate_episode,
    make_arrivals,
    make_workload,
    resolve_load,
    workload_mean_work,
)
from mara_env.workloads.arrivals import uses_load

ENV_ID = "mara/ClusterScheduling-v0"
MAX_EXPECTED_ARRIVALS = 1_000_000  # load x nodes x horizon beyond this would allocate without end
FORECAST_NOISE_STREAM = 0xF0CA57  # spawns the forecaster's noise seeds from an episode's seed
INFO_KEYS = ("slot", "completions", "expirations", "shaped_reward", "invalid_actions", "metrics")


def forecast_features(
    forecaster: str | Forecaster | None, max_tasks: int, calibrate: bool = False
) -> ForecastFeatures | None:
    """The per-slot forecast feature builder for an env's ``forecaster`` setting (None for ``"none"``),
    with an in-episode calibration when ``calibrate``."""
    if forecaster is None or forecaster == "none":
        return None
    if isinstance(forecaster, str):
        if forecaster not in forecast.FORECASTERS:
            allowed = ["none", *sorted(forecast.FORECASTERS)]
            raise ValueError(f"forecaster must be one of {allowed} or a forecaster object, got {forecaster!r}")
        forecaster = forecast.make(forecaster)
    elif not callable(getattr(forecaster, "predict", None)):
        raise ValueError(f"forecaster must be a name or an object with predict(), got {forecaster!r}")
    if calibrate and getattr(forecaster, "needs_truth", False):
        raise ValueError("calibrate_forecasts must be False with a forecaster that reads the truth (the oracle)")
    return ForecastFeatures(forecaster, max_tasks, InEpisodeCalibration() if calibrate else None)


class InvalidActionError(ValueError):
    """An action outside ``[0, K_max]``, malformed, or masked for the acting node."""


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's naming convention
    """Cooperative scheduling of training tasks on a cluster of discrete nodes.

    Takes the fields of :class:`mara_env.config.EnvConfig` as keyword arguments (``num_nodes``,
    ``max_tasks``, ``horizon``, ``workload``, ``load``, ``shaping``, ``forecaster``, ``max_cycles``,
    ``render_mode``, ``history_window``, ``switch_cost``, ``node_speeds``, ``curve_split``,
    ``arrivals``, ``faults``, ``invalid_action``; their meaning, defaults and bounds are documented
    there), or a ready ``config=EnvConfig(...)``.

    Invalid actions: with ``invalid_action="idle"`` (the default) a masked, out-of-range or
    non-integer action (``None`` on a live turn, ``inf``, ``True``) is played as idle and counted in
    ``infos[agent]["invalid_actions"]`` and in the episode's metrics; it costs the team that node's
    slot and nothing else. ``invalid_action="raise"`` raises :class:`InvalidActionError` instead and
    changes nothing.
    """

    metadata = {
        "name": "mara_cluster_scheduling_v0",
        "render_modes": ["ansi", "rgb_array", "human"],
        "is_parallelizable": True,
        "render_fps": 4,
    }

    def __init__(self, config: EnvConfig | None = None, **kwargs: Any) -> None:
        super().__init__()
        if config is not None and kwargs:
            raise TypeError(f"pass either config= or keyword settings, not both (got {sorted(kwargs)})")
        self.config = config if config is not None else EnvConfig.from_kwargs(kwargs)
        cfg = self.config
        self.sim_config = cfg.sim_config()
        self.workload = make_workload(cfg.workload, cfg.curve_split)
        self.arrivals = make_arrivals(cfg.arrivals)
        self.faults = FaultModel.from_config(cfg.faults)
        self.load = resolve_load(cfg.load)
        self.deadlines = DeadlineModel()
        self.rate = arrival_rate(self.load, float(self.sim_config.speeds().sum()), workload_mean_work(cfg.workload))
        if self.rate * cfg.horizon > MAX_EXPECTED_ARRIVALS:
            raise ValueError(
                f"load={cfg.load!r} with num_nodes={cfg.num_nodes} and horizon={cfg.horizon} means about "
                f"{self.rate * cfg.horizon:,.0f} arrivals per episode; at most {MAX_EXPECTED_ARRIVALS:,} are allowed"
            )
        if not uses_load(self.arrivals) and cfg.load != DEFAULTS.load:
            warnings.warn(f"load={cfg.load!r} does not apply to a trace: its rows give the arrivals", stacklevel=2)
        self.render_mode = cfg.render_mode
        self.layout = ObservationLayout(cfg.max_tasks, cfg.history_window, cfg.num_nodes)
        forecasts = forecast_features(cfg.forecaster, cfg.max_tasks, cfg.calibrate_forecasts)
        self.slot = SlotObservations(self.layout, forecasts)
        self.possible_agents = [f"node_{i}" for i in range(cfg.num_nodes)]
        self._agent_index = {a: i for i, a in enumerate(self.possible_agents)}
        self._set_spaces()
        self._np_random: np.random.Generator | None = None
        self._noise_seeds: np.random.Generator | None = None  # seeds of the forecaster's noise, one per episode
        self.sim: Simulator | None = None

    def _set_spaces(self) -> None:
        k, layout = self.config.max_tasks, self.layout
        obs_box = spaces.Box(-BOUND, BOUND, shape=(layout.size,), dtype=np.float32)
        mask_box = spaces.Box(0, 1, shape=(k + 1,), dtype=np.int8)
        obs_space = spaces.Dict({"observation": obs_box, "action_mask": mask_box})
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(k + 1) for a in self.possible_agents}
        self.state_space = spaces.Box(-BOUND, BOUND, shape=(layout.state_size,), dtype=np.float32)

    def metrics(self) -> dict[str, Any]:
        """The episode's metrics so far: the simulator's, the invalid actions played as idle, the
        rows of a trace that fell outside the horizon, and with ``calibrate_forecasts`` the forecasts'
        log shift."""
        metrics = self.sim.metrics()
        metrics["invalid_actions"] = self._invalid_actions
        metrics["trace_rows_dropped"] = int(getattr(self.arrivals, "rows_dropped", 0))
        calibration = getattr(self.slot.forecasts, "calibration", None)
        if calibration is not None:  # what the in-episode calibration has learnt so far
            metrics["forecast_log_shift"] = calibration.log_shift
        return metrics

    @property
    def node_timeline(self) -> np.ndarray | None:
        """``(horizon, M)`` bool, True where a node is up, drawn at reset; ``None`` without faults."""
        return self._node_timeline

    @property
    def invalid_actions(self) -> int:
        """Invalid actions played as idle so far this episode (``invalid_action="idle"``)."""
        return self._invalid_actions

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ episode
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        if seed is not None or self._np_random is None:
            self._np_random = np.random.default_rng(seed)
            # the forecaster's noise: a stream of its own, so the episodes' tasks and faults stay as they were
            self._noise_seeds = np.random.default_rng(None if seed is None else [seed, FORECAST_NOISE_STREAM])
        cfg = self.sim_config
        tasks = generate_episode(self.workload, self._np_random, self.rate, cfg.horizon, self.deadlines, self.arrivals)
        self.sim = Simulator(cfg, tasks)
        self._node_timeline = self.faults.timeline(self._np_random, cfg.num_nodes, cfg.horizon) if self.faults else None
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._cycles = 0
        self._invalid_actions = 0
        self._gantt: list[np.ndarray] = []
        self._potential = self.sim.potential()
        self.slot.reset(noise_seed=int(self._noise_seeds.integers(2**63)))
        self._begin_slot()
        info = self._info(slot=0, completions=0, expirations=0, reward=0.0)
        self.infos = {a: dict(info) for a in self.agents}

    def _begin_slot(self) -> None:
        """Apply the slot's node faults, then build what every node sees this slot."""
        if self._node_timeline is not None:
            for node, up in enumerate(self._node_timeline[self.sim.slot].tolist()):
                self.sim.set_node_up(node, up)
        self._pending = np.full(self.sim_config.num_nodes, IDLE, dtype=np.int64)  # the nodes' choices
        self.slot.begin(self.sim)
        self.agent_selection = self.agents[0]

    # ------------------------------------------------------------------ views
    def action_mask(self, agent: str) -> np.ndarray:
        """Allowed actions of ``agent`` now: idle always; occupied rows when the node is up."""
        return self.slot.action_mask(self._agent_index[agent])

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        return self.slot.observe(self._agent_index[agent])

    def state(self) -> np.ndarray:
        """Global state for centralised critics (layout: ``ObservationLayout.state_slices``)."""
        return self.slot.state()

    # ------------------------------------------------------------------ dynamics
    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        node = self.slot.turn
        action = self._checked_action(agent, node, action)
        self._cumulative_rewards[agent] = 0.0
        self._pending[node] = action - 1  # 0 (idle) becomes IDLE = -1
        self.slot.choose(action - 1 if action > 0 else None)
        if node == self.sim_config.num_nodes - 1:
            self._end_slot()
        else:
            self._clear_rewards()
            self.agent_selection = self.agents[node + 1]
        self._accumulate_rewards()

    def _checked_action(self, agent: str, node: int, action: Any) -> int:
        k = self.layout.max_tasks
        value = _as_action(action)
        if value is None or not 0 <= value <= k:
            return self._reject(agent, action, f"is not an integer in [0, {k}]")
        if not self.slot.action_mask(node)[value]:
            why = "the node is down" if not self.sim.node_up[node] else f"row {value - 1} is empty"
            return self._reject(agent, action, f"is masked ({why})")
        return value

    def _reject(self, agent: str, action: Any, why: str) -> int:
        if self.config.invalid_action == "idle":
            self._invalid_actions += 1
            return 0
        allowed = np.flatnonzero(self.action_mask(agent)).tolist()
        raise InvalidActionError(
            f"{agent} at slot {self.sim.slot}: action {action!r} {why}; allowed actions: {allowed}"
        )

    def _end_slot(self) -> None:
        sim = self.sim
        result = sim.step(self._pending)
        self._cycles += 1
        self._gantt.append(np.where(sim.node_up, sim.last_task, -2))
        terminated = sim.done
        truncated = not terminated and self._cycles >= self.config.cycles
        reward = self._team_reward(result, final=terminated or truncated)
        info = self._info(result.slot, len(result.completed), len(result.expired), reward)
        for a in self.agents:
            self.rewards[a] = reward
            self.infos[a] = dict(info)
            self.terminations[a] = terminated
            self.truncations[a] = truncated
        if not (terminated or truncated):
            self._begin_slot()
        else:
            self.agent_selection = self.agents[0]

    def _team_reward(self, result: SlotResult, final: bool) -> float:
        """Completions this slot, plus ``Phi(s') - Phi(s)`` when shaping (``Phi`` = 0 at the end)."""
        completions = float(len(result.completed))
        new_potential = 0.0 if final else self.sim.potential()
        shaping_term = new_potential - self._potential
        self._potential = new_potential
        return completions + shaping_term if self.config.shaping else completions

    def _info(self, slot: int, completions: int, expirations: int, reward: float) -> dict[str, Any]:
        """The info every agent gets; the same keys (:data:`INFO_KEYS`) from ``reset()`` on."""
        metrics = self.metrics()
        return {
            "slot": slot,
            "completions": completions,
            "expirations": expirations,
            "shaped_reward": reward,
            "invalid_actions": self._invalid_actions,
            "metrics": metrics,
        }

    # ------------------------------------------------------------------ render
    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            logger.warn("render() called without a render_mode; pass render_mode='ansi', 'rgb_array' or 'human'.")
            return None
        if self.render_mode == "rgb_array":
            return gantt_chart(self._gantt, self.sim_config.num_nodes, self.sim_config.horizon)
        text = ansi_table(self.sim)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass


def _as_action(action: Any) -> int | None:
    """The integer an action stands for, or ``None`` if it is not a whole number (bools, inf, NaN, text)."""
    if isinstance(action, (bool, np.bool_)) or action is None:
        return None
    try:
        value = int(action)
    except (TypeError, ValueError, OverflowError):
        return None
    try:
        return value if value == action else None
    except (TypeError, ValueError):
        return None


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
