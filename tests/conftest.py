"""Settings for the whole test session: one torch thread per test process.

The README's ``pytest -n 2`` runs two workers; torch's default of one thread per core would put four
busy threads on two cores, and torch's OpenMP threads spin while they wait, so oversubscribed runs of
the torch-heavy tests took about twice as long. The scripts and snippets the tests start inherit the
variable. Set ``OMP_NUM_THREADS`` yourself to choose another count."""

import os

import torch

os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
