"""Harness that runs real failing training jobs on a private local SLURM cluster.

See ``harness/cluster.py`` (the cluster), ``harness/train.py`` (the training program with
injectable faults), ``harness/scenarios.py`` (the failure scenarios) and ``harness/record.py``
(recording them into ``sample_logs/real``).
"""
