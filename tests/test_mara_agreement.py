"""benchmarks/mara_agreement.py: the per-rule tally by hand, and the cell summary over episodes."""

import math

from tests.scripts import load_script

agreement = load_script("benchmarks/mara_agreement.py")
SRW, EDF, UNIFORM = 0, 1, 2  # GATE_PATHS' order


def test_the_tally_splits_turns_by_the_rule_the_label_followed():
    tally = agreement.PathTally()
    for path, agreed in [(EDF, True), (EDF, False), (UNIFORM, True), (-1, False), (EDF, True)]:
        tally.add(path, agreed)
    out = tally.summary()
    assert (out["turns"], out["agreement"]) == (5, 3 / 5)  # the -1 turn counts in the total only
    assert (out["turns edf"], out["agree edf"]) == (3, 2 / 3)
    assert (out["turns uniform"], out["agree uniform"]) == (1, 1.0)
    assert out["turns srw"] == 0 and math.isnan(out["agree srw"])


def test_a_cell_weights_its_episodes_by_turns():
    first = {"planner": "edf_uniform", "turns": 10, "agreement": 0.9}
    first |= {"turns srw": 0, "agree srw": float("nan"), "turns edf": 10, "agree edf": 0.9}
    first |= {"turns uniform": 0, "agree uniform": float("nan")}
    second = {"planner": "edf_uniform", "turns": 30, "agreement": 0.5}
    second |= {"turns srw": 0, "agree srw": float("nan"), "turns edf": 20, "agree edf": 0.5}
    second |= {"turns uniform": 10, "agree uniform": 0.5}
    row = agreement.summary_row([first, second])
    # 40 turns, 9 + 15 agreeing; edf 30 turns, 9 + 10 agreeing; no srw turn; uniform 10 turns, 5 agreeing
    assert row == ["edf_uniform", "40", "0.600", "0", "-", "30", "0.633", "10", "0.500"]


def test_a_shipped_candidate_is_named_by_its_alias_not_by_a_path():
    from mara_agents.mara.teacher import CANDIDATE_ALIASES, candidate_name

    assert candidate_name(CANDIDATE_ALIASES["fifth_generalist"]) == "fifth_generalist"
    assert "/" in CANDIDATE_ALIASES["ninth_generalist"]  # what the report printed before
    assert candidate_name("mara_generalist:runs/mine.pt") == "mara_generalist:runs/mine.pt"
    assert candidate_name("srw") == "srw"
