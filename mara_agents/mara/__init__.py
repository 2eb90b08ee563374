"""MARA's policy: a cooperative autoregressive multi-agent transformer trained with PPO (our design).

Work in progress: the network (`network.py`) and its observation encoding are here; the PPO trainer,
the shipped checkpoint and the `mara` scheduler land with the rest of the policy issue.
"""
