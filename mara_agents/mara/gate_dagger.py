"""Fitting a slot actor's gate on the states the policy reaches itself: DAgger on the gate alone.

Cloning fits the gate (the per-slot weights of the ``srw``, ``edf`` and ``uniform`` skip paths) on the
teacher's states. There the slot token tells the load apart from how the teacher's table looks, and
on the policy's own states that reading fails: a generalist's gate picked the planner its label
wanted on ``edf_uniform``'s states of big ``tabular`` clusters and ``srw`` on its own ``heavy`` ones
(docs/mara_policy.md). DAgger (Ross, Gordon and Bagnell, 2011) labels the learner's own states
instead. Here:

1. **Label** (:func:`label_own_play`): the policy plays scenarios drawn from a
   :class:`~.scenarios.ScenarioSampler` (after the same planner warm-up as training; seeds from
   :data:`GATE_SEED_BASE` up, which no rollout, demonstration, selector play or evaluation uses); the
   teacher sees every turn and names the planner it would follow (:meth:`~.teacher.Teacher.path`).
   Per slot with a task to choose, what the gate reads (:func:`~.numpy_actor.gate_inputs`) and how
   many turns the teacher gave each path are kept.
2. **Fit** (:func:`fit_gate`): the gate's layers only, everything else frozen (the slot token does
   not change, so what the gate reads is recorded once), by the cross-entropy of the gate's path
   weights against those counts, as cloning's gate loss weighs every turn.

Rounds repeat both with the newly fitted gate playing, on the union of every round's labels.
"""

from __future__ import annotations

import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.context_features import RULE_INPUTS, big_cluster
from mara_agents.mara.frozen_parts import part_digest
from mara_agents.mara.gate_paths import GATE_PATHS, stacked_paths
from mara_agents.mara.numpy_actor import gate_inputs
from mara_agents.mara.scenarios import TRAINING_SEED_BASE, ScenarioSampler, scenario_settings
from mara_agents.mara.scheduler import MARAScheduler
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.mara.teacher import Teacher
from mara_agents.mara.warmup import learner_window, play_warmup
from mara_agents.mara.workers import map_forked
from mara_env.env import live_turns, raw_env
from mara_env.observation import layout_of
from mara_env.workloads import WORKLOADS

GATE_SEED_BASE = TRAINING_SEED_BASE + 800_000_000  # above rollouts, demonstrations and selector plays
GATE_SEED_SPAN = 100_000_000  # the gate rounds' seeds end where the action rounds' begin (+900,000,000)
UNIFORM = GATE_PATHS.index("uniform")


@dataclass
class GateLabels:
    """Per slot of the policy's own play: what its gate read, the teacher's turns on each path, and the
    scenario's workload and cluster size (to look at one corner's labels)."""

    inputs: np.ndarray  # (slots, gate inputs)
    counts: np.ndarray  # (slots, 3): turns the teacher labelled srw, edf, uniform (GATE_PATHS order)
    workloads: np.ndarray  # (slots,) str
    nodes: np.ndarray  # (slots,) int: M
    reader: str = ""  # frozen_parts.part_digest of the encoder that made the slot tokens ("": not recorded)

    def __len__(self) -> int:
        return len(self.counts)

    @classmethod
    def concatenate(cls, parts: list[GateLabels]) -> GateLabels:
        fields = ("inputs", "counts", "workloads", "nodes")
        readers = {part.reader for part in parts}
        reader = readers.pop() if len(readers) == 1 else ""  # mixed readers: none can be vouched for
        return cls(*(np.concatenate([getattr(part, name) for part in parts]) for name in fields), reader=reader)

    def with_rule_on_big_clusters(self) -> GateLabels:
        """These labels as a ``gate_rule_big`` gate reads them: the rule's path (the last inputs) zeroed on
        clusters of fewer than ``RULE_MIN_NODES`` nodes. For labels played by a gate that read it on every
        size; those played by a ``gate_rule_big`` gate come back unchanged."""
        inputs = self.inputs.copy()
        inputs[~big_cluster(self.nodes), -RULE_INPUTS:] = 0.0
        return GateLabels(inputs, self.counts, self.workloads, self.nodes, self.reader)

    def save(self, path: Path) -> None:
        """Write the labels to ``path`` (``.npz``, no pickles)."""
        np.savez_compressed(path, inputs=self.inputs, counts=self.counts, workloads=self.workloads, nodes=self.nodes,
                            reader=np.array(self.reader))  # fmt: skip

    def check_for(self, net: SlotMARANet) -> None:
        """``ValueError`` unless ``net``'s gate reads inputs of these labels' width, and their slot tokens came
        from ``net``'s encoder (labels that do not record theirs are let through on the width alone)."""
        width = gate_input_width(net)
        if self.inputs.shape[1] != width:
            raise ValueError(
                f"the labels hold gate inputs of width {self.inputs.shape[1]}, this network's gate reads {width}"
            )
        own = part_digest(net, "encoder")
        if self.reader and self.reader != own:
            raise ValueError(
                f"the labels' slot tokens were read by another encoder ({self.reader}, this network's is {own}): "
                "refit the network that played them, or one whose encoder has not moved since "
                "(a gate refit, or tune_actions.py --freeze encoder)"
            )

    @classmethod
    def load(cls, path: Path) -> GateLabels:
        """Labels written by :meth:`save`; ``ValueError`` naming ``path`` for anything else."""
        try:
            with np.load(path, allow_pickle=False) as blob:
                arrays = {name: blob[name] for name in blob.files}
        except (OSError, EOFError, ValueError, zipfile.BadZipFile) as error:
            raise ValueError(f"{path}: not a readable file of gate labels ({error})") from error
        missing = {"inputs", "counts", "workloads", "nodes"} - set(arrays)
        if missing:
            raise ValueError(f"{path}: not a file of gate labels (missing {sorted(missing)})")
        reader = str(arrays["reader"]) if "reader" in arrays else ""
        labels = cls(arrays["inputs"], arrays["counts"], arrays["workloads"], arrays["nodes"], reader)
        slots = len(labels)
        shapes_agree = labels.inputs.ndim == 2 and labels.counts.shape == (slots, len(GATE_PATHS))
        if not (shapes_agree and len(labels.inputs) == len(labels.workloads) == len(labels.nodes) == slots):
            raise ValueError(f"{path}: gate labels of mismatched shapes")
        if not (np.isfinite(labels.inputs).all() and np.isfinite(labels.counts).all() and (labels.counts >= 0).all()):
            raise ValueError(f"{path}: gate labels must be finite, with counts >= 0")
        return labels


def gate_input_width(net: SlotMARANet) -> int:
    """How many numbers ``net``'s gate reads per slot: the slot token, with a ``gate_context`` gate the
    rate and ``log2 M`` after it, and with ``gate_rule`` the rule's path last."""
    return net.gate.in_features if net.gate_hidden is None else net.gate_hidden.in_features


def _label_episode(job: tuple[Path, dict, str, int, ScenarioSampler | None]) -> GateLabels:
    """One episode the policy in ``checkpoint`` plays, labelled per slot by ``teacher``."""
    checkpoint, base_env, teacher, seed, scenarios = job
    net, trained_env, _ = load_checkpoint(checkpoint)
    student = MARAScheduler(net, trained_env=trained_env)
    settings = scenario_settings(base_env, scenarios, seed)
    env = raw_env(**settings)
    env.reset(seed=seed)
    guide = Teacher.for_env(teacher, settings)
    guide.reset(seed)
    student.reset(seed)
    play_warmup(env, scenarios, settings, seed, guide)
    cut = learner_window(scenarios, settings, seed).cut
    context, rule, big = net.gate_hidden is not None, net.config["gate_rule"], net.config["gate_rule_big"]
    inputs, counts = [], []
    for agent in live_turns(env):
        if cut is not None and env.sim.slot >= cut:
            break
        observation = env.observe(agent)
        guide.action(env, observation)  # every turn: the teacher's planners keep their memory of the episode
        path = guide.path()
        action = student.act(observation, agent)
        if env.slot.turn == 0:  # the gate reads the slot once, at its first turn
            vector = observation["observation"]
            layout = layout_of(vector)
            _, globals_, _, _ = layout.split_observation(vector)
            inputs.append(gate_inputs(student.slot_parts.pooled, globals_, layout, context, rule, big))
            counts.append(np.zeros(len(GATE_PATHS)))
        if path >= 0 and observation["action_mask"][1:].any():
            counts[-1][path] += 1
        env.step(action)
    kept = [i for i, row in enumerate(counts) if row.sum() > 0]
    return GateLabels(
        np.asarray([inputs[i] for i in kept], dtype=np.float32).reshape(-1, gate_input_width(net)),
        np.asarray([counts[i] for i in kept], dtype=np.float32).reshape(-1, len(GATE_PATHS)),
        np.full(len(kept), settings.get("workload", ""), dtype="<U32"),
        np.full(len(kept), env.sim.config.num_nodes, dtype=np.int64),
        part_digest(net, "encoder"),
    )


def label_own_play(
    checkpoint: Path,
    env_kwargs: dict,
    teacher: str,
    seeds: list[int],
    scenarios: ScenarioSampler | None = None,
    jobs: int = 1,
    progress: bool = True,
) -> GateLabels:
    """:class:`GateLabels` of the episodes on ``seeds`` that the policy in ``checkpoint`` plays, labelled by
    ``teacher`` (``jobs`` processes; the same arguments give the same labels)."""
    net, _, _ = load_checkpoint(Path(checkpoint))  # refuse a bad file before starting any process
    if not isinstance(net, SlotMARANet) or net.hint_embed is None:
        raise ValueError(f"{checkpoint}: gate fitting needs a slot actor with planner hints (it has no gate)")
    work = [(Path(checkpoint), env_kwargs, teacher, seed, scenarios) for seed in seeds]
    parts = map_forked(_label_episode, work, jobs, desc="gate labels", unit="episode", disable=not progress)
    return GateLabels.concatenate(parts)


def _path_weights(net: SlotMARANet, labels: GateLabels) -> torch.Tensor:
    """``(slots, 3)``: ``net``'s gate weights on the three paths at each labelled slot."""
    return stacked_paths(*net.gate_weights(torch.from_numpy(labels.inputs), torch.from_numpy(labels.nodes)))


def gate_cross_entropy(net: SlotMARANet, labels: GateLabels) -> torch.Tensor:
    """Mean cross-entropy of ``net``'s gate against the teacher's turns (uniform's only with that path)."""
    weights = _path_weights(net, labels)
    counts = torch.from_numpy(labels.counts)
    if not net.config["uniform_pick"]:
        counts = counts.clone()
        counts[:, UNIFORM] = 0.0
    return -(counts * torch.log(weights.clamp(min=1e-6))).sum() / counts.sum().clamp(min=1.0)


def gate_agreement(net: SlotMARANet, labels: GateLabels) -> float:
    """Share of the labelled turns whose path the gate weighs most at their slot."""
    with torch.no_grad():
        led = _path_weights(net, labels).numpy().argmax(-1)
    return float(labels.counts[np.arange(len(led)), led].sum() / max(labels.counts.sum(), 1.0))


@dataclass(frozen=True)
class Corner:
    """Slots a gate refit teaches (:func:`keep_own_gate`): ``workload`` on ``low`` to ``high`` nodes, the
    teacher's counts there times ``weight``; written and read as ``WORKLOAD,LO-HI[,WEIGHT]``."""

    workload: str
    low: int
    high: int
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.workload not in WORKLOADS:  # it would teach no slot, silently
            raise ValueError(f"corner workload {self.workload!r} is not registered; registered: {sorted(WORKLOADS)}")
        if not 1 <= self.low <= self.high:
            raise ValueError(f"nodes must be a range 1 <= LO <= HI, got {self.low}-{self.high}")
        check_hold_weight(self.weight, name="a corner's weight")

    def __str__(self) -> str:
        weight = "" if self.weight == 1.0 else f",{self.weight:g}"
        return f"{self.workload},{self.low}-{self.high}{weight}"

    def holds(self, labels: GateLabels) -> np.ndarray:
        """Which of ``labels``' slots lie in the corner."""
        return (labels.workloads == self.workload) & (labels.nodes >= self.low) & (labels.nodes <= self.high)


def keep_own_gate(
    net: SlotMARANet,
    labels: GateLabels,
    corners: Sequence[Corner],
    planners_only: bool = False,
    hold_weight: float = 1.0,
) -> GateLabels:
    """``labels`` with the teacher's counts kept only on the slots of ``corners`` (times each corner's
    weight; with ``planners_only``: only the corners' slots the teacher gave more turns on ``edf`` and
    ``uniform`` than on ``srw``); every other slot is labelled with ``net``'s own path weights times its
    turns, times ``hold_weight``, so a refit moves the gate where the teacher leads and holds it
    elsewhere (the harder the larger ``hold_weight``).

    Why: the shipped generalist's gate and learned scores are fitted to each other, and a gate refitted
    on its teacher everywhere lost 2-4 points on 8-node ``vision`` and ``mixed``, where the policy leads
    its teacher's planners (docs/mara_policy.md, the gate graft). Several weighted corners: a refit
    taught the rule's ``srw`` slots on big ``tabular`` leaned big ``rl`` to ``srw`` too, held there or
    taught its teacher's planners at weight 1; taught them at weight 10, with labels of the refit's own
    play there, it kept big ``rl`` level (docs/mara_policy.md, session 58)."""
    if not corners:
        raise ValueError("name at least one corner to teach")
    check_hold_weight(hold_weight)
    taught, weight = np.zeros(len(labels), bool), np.ones(len(labels), np.float32)
    for corner in corners:
        inside = corner.holds(labels)
        taught |= inside
        weight[inside] = corner.weight  # a later corner's weight wins where corners overlap
    if planners_only:
        taught &= labels.counts[:, 0] < labels.counts[:, 1:].sum(1)
    with torch.no_grad():
        own = _path_weights(net, labels).numpy()
    held = own * labels.counts.sum(1, keepdims=True) * hold_weight
    counts = np.where(taught[:, None], labels.counts * weight[:, None], held)
    return GateLabels(labels.inputs, counts.astype(np.float32), labels.workloads, labels.nodes, labels.reader)


def check_hold_weight(hold_weight: float, name: str = "hold_weight") -> None:
    """``ValueError`` (naming the value ``name``) unless ``hold_weight`` is a finite number > 0."""
    if not (np.isfinite(hold_weight) and hold_weight > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {hold_weight}")


def fit_gate(
    net: SlotMARANet,
    labels: GateLabels,
    steps: int = 400,
    learning_rate: float = 3e-3,
    rule_only: bool = False,
    big_only: bool = False,
) -> dict[str, float]:
    """Fit ``net``'s gate layers (in place; nothing else changes) to ``labels`` by full-batch Adam (no
    draw: the same labels give the same gate); the loss and agreement before and after. With
    ``rule_only`` (a ``gate_rule`` gate) only the tanh layer's weights on the rule's path move: where the
    gate reads no rule (small clusters, with ``gate_rule_big``) it weighs the paths exactly as before.
    With ``big_only`` (a ``split_gate``) only the big clusters' gate moves, fitted on their slots; small
    clusters' gate stays exactly as it was."""
    if len(labels) == 0:
        raise ValueError("no labelled slot to fit the gate on (every episode had no task to choose)")
    if rule_only and big_only:
        raise ValueError("rule_only and big_only each name the weights to fit: choose one")
    if rule_only and not net.config.get("gate_rule"):
        raise ValueError("rule_only fits the weights on the rule's path: the gate must read it (gate_rule)")
    if big_only and not net.config.get("split_gate"):
        raise ValueError("big_only fits the big clusters' gate: the network must have one (split_gate)")
    hook = None
    if rule_only:  # Adam leaves a weight whose gradient is always 0 where it was
        parameters = [net.gate_hidden.weight]
        kept = torch.zeros_like(net.gate_hidden.weight)
        kept[:, -RULE_INPUTS:] = 1.0
        hook = net.gate_hidden.weight.register_hook(lambda grad: grad * kept)
    else:
        parameters = [p for layer in gate_layers(net, big_only) for p in layer.parameters()]
    before = {"loss_before": _loss(net, labels), "agreement_before": gate_agreement(net, labels)}
    optimizer = torch.optim.Adam(parameters, lr=learning_rate)
    try:
        for _ in range(steps):
            optimizer.zero_grad()
            loss = gate_cross_entropy(net, labels)
            loss.backward()
            optimizer.step()
    finally:
        if hook is not None:
            hook.remove()
    return {**before, "loss_after": _loss(net, labels), "agreement_after": gate_agreement(net, labels)}


def refit_on_labels(
    net: SlotMARANet,
    labels: GateLabels,
    corners: Sequence[Corner] | None = None,
    planners_only: bool = False,
    hold_weight: float = 1.0,
    steps: int = 400,
    learning_rate: float = 3e-3,
    rule_only: bool = False,
    big_only: bool = False,
) -> dict[str, float]:
    """:func:`fit_gate` of ``net`` (in place) on saved ``labels``, read as its gate reads them (the rule's
    path zeroed on small clusters for a ``gate_rule_big`` gate) and, with ``corners``, taught there alone
    (:func:`keep_own_gate`); the slots fitted and the fit's statistics."""
    if net.config.get("gate_rule_big"):
        labels = labels.with_rule_on_big_clusters()
    if corners is not None:
        labels = keep_own_gate(net, labels, corners, planners_only, hold_weight)
    return {"slots": len(labels), **fit_gate(net, labels, steps, learning_rate, rule_only, big_only)}


def gate_layers(net: SlotMARANet, big_only: bool = False) -> list[torch.nn.Linear]:
    """The layers a gate fit moves: the gate and its tanh layer, and a split gate's big clusters' pair
    (only that pair with ``big_only``)."""
    small = [net.gate] + ([net.gate_hidden] if net.gate_hidden is not None else [])
    big = [net.big_gate, net.big_gate_hidden] if net.config.get("split_gate") else []
    return big if big_only else small + big


def _loss(net: SlotMARANet, labels: GateLabels) -> float:
    with torch.no_grad():
        return float(gate_cross_entropy(net, labels))


def dagger_rounds(
    net: SlotMARANet,
    checkpoint: Path,
    env_kwargs: dict,
    teacher: str,
    scenarios: ScenarioSampler | None,
    save_to: Path,
    rounds: int = 2,
    episodes: int = 200,
    steps: int = 400,
    learning_rate: float = 3e-3,
    jobs: int = 2,
    progress: bool = True,
    labels_to: Path | None = None,
    first_episode: int = 0,
) -> list[dict[str, float]]:
    """``rounds`` of :func:`label_own_play` and :func:`fit_gate` on ``net`` (in place), whose weights are
    in ``checkpoint`` (the first round's player). Each round plays ``episodes`` new scenarios with the
    gate fitted so far (written to ``save_to``, keeping ``checkpoint``'s env and extra records) and refits on
    every round's labels (all of them written to ``labels_to`` after each round, if given); per round, its
    labelled slots, the fit's statistics and seconds. The rounds play the gate seeds from ``first_episode``
    on (:func:`gate_seeds`), so a later call can play scenarios no earlier one did. A ``split_gate``
    network's rounds fit its big clusters' gate alone (``fit_gate(big_only=True)``), as its refit on saved
    labels does: small clusters keep playing exactly as before."""
    if rounds < 1 or episodes < 1:
        raise ValueError(f"rounds and episodes must be >= 1, got {rounds} and {episodes}")
    check_first_episode(first_episode, rounds, episodes)
    _, env, extra = load_checkpoint(Path(checkpoint))
    player, labels, report = Path(checkpoint), [], []
    for index in range(rounds):
        began = time.perf_counter()
        seeds = gate_seeds(first_episode + index * episodes, episodes)
        labels.append(label_own_play(player, env_kwargs, teacher, seeds, scenarios, jobs, progress))
        every = GateLabels.concatenate(labels)
        if labels_to is not None:
            every.save(labels_to)
        stats = fit_gate(net, every, steps, learning_rate, big_only=bool(net.config.get("split_gate")))
        player = save_checkpoint(net, save_to, env, {**extra, "gate_dagger_rounds": index + 1})
        report.append({"round": index + 1, "slots": len(labels[-1]), **stats,
                       "seconds": round(time.perf_counter() - began, 1)})  # fmt: skip
    return report


def check_first_episode(first_episode: int, rounds: int, episodes: int, name: str = "first_episode") -> None:
    """``ValueError`` (naming the value ``name``) unless ``rounds`` of ``episodes`` gate scenarios from the
    ``first_episode``-th on stay within the gate seeds, which end where the action rounds' begin."""
    last = GATE_SEED_SPAN - rounds * episodes
    if not 0 <= first_episode <= last:
        raise ValueError(
            f"{name} must lie in [0, {last:,}] for {rounds} rounds of {episodes} episodes (the gate seeds "
            f"end where the action rounds' begin), got {first_episode}"
        )


def gate_seeds(first_episode: int, episodes: int) -> list[int]:
    """The seeds of ``episodes`` gate-labelling scenarios from the ``first_episode``-th on."""
    return list(range(GATE_SEED_BASE + first_episode, GATE_SEED_BASE + first_episode + episodes))
