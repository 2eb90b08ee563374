"""Builders of the recorded curve banks (see :mod:`mara_env.workloads.build` for the interface).

They need the ``banks`` extra (scikit-learn, stable-baselines3); loading a shipped bank does not.
"""
