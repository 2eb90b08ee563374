"""PettingZoo's whole test suite, called directly on the registered env with its default arguments.

No shims: every function gets exactly what PettingZoo's docs show (an env, a constructor, or the
module with ``env``/``parallel_env``/``raw_env``). The tests that sample actions without the mask
(``parallel_seed_test``, ``max_cycles_test``, ``state_test``) pass because the default
``invalid_action`` plays a masked action as idle and counts it instead of raising.
"""

import re
from functools import partial

import pettingzoo
from pettingzoo.test import (
    api_test,
    max_cycles_test,
    parallel_api_test,
    parallel_seed_test,
    performance_benchmark,
    render_test,
    seed_test,
    state_test,
)

import mara_env

make_aec = partial(pettingzoo.make, "aec", mara_env.ENV_ID)
make_parallel = partial(pettingzoo.make, "parallel", mara_env.ENV_ID)


def test_api_test():
    api_test(make_aec())


def test_parallel_api_test():
    parallel_api_test(make_parallel())


def test_seed_test():
    seed_test(make_aec)


def test_parallel_seed_test():
    parallel_seed_test(make_parallel)


def test_max_cycles_test():
    # The module form of PettingZoo's docs: the package exposes env, parallel_env and raw_env.
    max_cycles_test(mara_env)


def test_state_test():
    state_test(make_aec(), make_parallel())


def test_render_test():
    render_test(make_aec)


def test_performance_benchmark(capsys):
    performance_benchmark(make_aec())
    out = capsys.readouterr().out
    turns = float(re.search(r"([\d.e+]+) turns per second", out).group(1))
    assert turns > 100, f"only {turns:.0f} node turns per second"
