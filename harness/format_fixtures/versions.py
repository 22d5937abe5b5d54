"""Versions of the simulated software stack, fixed paths, and per-release source line numbers."""

from __future__ import annotations

from dataclasses import dataclass

MEGATRON_DIR = "/lustre/fsw/llm/Megatron-LM"
DATA_PREFIX = "/lustre/fsw/llm/data/fineweb-edu/gpt2_text_document"
CKPT_DIR = "/lustre/fsw/llm/checkpoints/gpt-8b"
FQDN_SUFFIX = ".hpc.internal"

Ver = tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class Versions:
    """The version combination one scenario follows; every format choice keys off it."""

    torch: str  # "2.6.0"
    nccl: str  # "2.21.5"
    cuda: str  # "12.4"
    megatron: str  # "core_v0.12.0" or "23.04"
    slurm: str  # "23.02.7"
    python: str = "3.12"

    @property
    def t(self) -> Ver:
        """torch as (major, minor)."""
        return parse_version(self.torch)[:2]

    @property
    def n(self) -> Ver:
        """NCCL as (major, minor, patch)."""
        return parse_version(self.nccl)

    @property
    def s(self) -> Ver:
        """Slurm as (year, month)."""
        return parse_version(self.slurm)[:2]

    @property
    def m(self) -> Ver:
        """Megatron version as (0, minor); release 23.04 maps to (0, 3)."""
        if self.megatron.startswith("core_v"):
            return parse_version(self.megatron[len("core_v") :])[:2]
        return (0, 3)

    @property
    def py(self) -> Ver:
        return parse_version(self.python)

    def describe(self) -> str:
        mega = self.megatron
        if not mega.startswith("core_v"):
            mega = f"{mega} (pre-core)"
        return (
            f"torch {self.torch}, NCCL {self.nccl}, Megatron {mega}, "
            f"Slurm {self.slurm}, Python {self.python}"
        )


def parse_version(s: str) -> Ver:
    return tuple(int(p) for p in s.split("."))


# Per-release source line numbers. They differ per release and must never be relied on by
# the analyzer; the values are plausible for each release, not asserted by the reference.
PGNCCL_LINES: dict[Ver, dict[str, int]] = {
    (1, 13): {"timeout": 821, "handle": 455, "handle2": 460},
    (2, 3): {"timeout": 1316, "summary": 1553, "handle": 1606, "handle2": 1612, "wdterm": 1401},
    (2, 4): {
        "timeout": 607,
        "summary": 1664,
        "handle": 577,
        "handle2": 583,
        "wdterm": 1515,
        "destruct": 1168,
    },
    (2, 5): {
        "timeout": 616,
        "summary": 1785,
        "handle": 630,
        "handle2": 636,
        "wdterm": 1595,
        "destruct": 1250,
        "async": 1780,
    },
    (2, 6): {
        "timeout": 632,
        "summary": 2271,
        "stack": 2291,
        "handle": 618,
        "handle2": 624,
        "wdterm": 1664,
        "destruct": 1476,
        "async": 2262,
    },
    (2, 7): {
        "timeout": 635,
        "summary": 2314,
        "stack": 2334,
        "handle": 621,
        "handle2": 627,
        "wdterm": 1906,
        "destruct": 1538,
        "async": 2305,
    },
    (2, 8): {
        "timeout": 684,
        "summary": 2099,
        "stack": 2119,
        "handle": 670,
        "handle2": 676,
        "wdterm": 2023,
        "destruct": 1512,
        "async": 2090,
    },
    (2, 9): {
        "timeout": 696,
        "summary": 2127,
        "stack": 2147,
        "handle": 682,
        "handle2": 688,
        "wdterm": 2051,
        "destruct": 1530,
        "async": 2118,
    },
    (2, 12): {
        "timeout": 713,
        "summary": 2203,
        "stack": 2223,
        "handle": 699,
        "handle2": 705,
        "wdterm": 2127,
        "destruct": 1561,
        "async": 2194,
    },
}

# torch/distributed/run.py, elastic api.py, errors/__init__.py, launcher/api.py,
# agent/server/api.py line numbers per release (see the note on PGNCCL_LINES).
ELASTIC_LINES: dict[Ver, dict[str, int]] = {
    (1, 13): {
        "banner": 766,
        "close": 328,
        "failed": 492,
        "run_module": 765,
        "wrapper": 346,
        "main": 762,
        "run": 753,
        "call": 131,
        "launch": 245,
        "agent_run": 123,
        "metrics": 125,
        "invoke": 850,
        "sleep": 709,
        "handler": 62,
        "received": 729,
    },
    (2, 3): {
        "banner": 757,
        "close": 833,
        "failed": 840,
        "run_module": 883,
        "wrapper": 347,
        "main": 879,
        "run": 870,
        "call": 132,
        "launch": 263,
        "agent_run": 254,
        "metrics": 123,
        "invoke": 727,
        "sleep": 876,
        "handler": 76,
        "received": 734,
    },
    (2, 4): {
        "banner": 757,
        "close": 858,
        "failed": 833,
        "run_module": 905,
        "wrapper": 348,
        "main": 901,
        "run": 892,
        "call": 133,
        "launch": 264,
        "agent_run": 260,
        "metrics": 123,
        "invoke": 733,
        "sleep": 870,
        "handler": 79,
        "received": 740,
    },
    (2, 5): {
        "banner": 793,
        "close": 897,
        "failed": 869,
        "run_module": 923,
        "wrapper": 355,
        "main": 919,
        "run": 910,
        "call": 138,
        "launch": 269,
        "agent_run": 260,
        "metrics": 137,
        "invoke": 696,
        "sleep": 855,
        "handler": 84,
        "received": 705,
    },
    (2, 6): {
        "banner": 793,
        "close": 897,
        "failed": 869,
        "run_module": 923,
        "wrapper": 355,
        "main": 919,
        "run": 910,
        "call": 138,
        "launch": 269,
        "agent_run": 260,
        "metrics": 137,
        "invoke": 696,
        "sleep": 855,
        "handler": 84,
        "received": 705,
    },
    (2, 7): {
        "banner": 766,
        "close": 900,
        "failed": 874,
        "run_module": 896,
        "wrapper": 355,
        "main": 892,
        "run": 883,
        "call": 139,
        "launch": 270,
        "agent_run": 261,
        "metrics": 138,
        "invoke": 711,
        "sleep": 870,
        "handler": 84,
        "received": 720,
    },
    (2, 8): {
        "banner": 770,
        "close": 908,
        "failed": 882,
        "run_module": 901,
        "wrapper": 357,
        "main": 897,
        "run": 888,
        "call": 143,
        "launch": 277,
        "agent_run": 268,
        "metrics": 138,
        "invoke": 715,
        "sleep": 874,
        "handler": 84,
        "received": 724,
    },
    (2, 9): {
        "banner": 810,
        "close": 918,
        "failed": 892,
        "run_module": 940,
        "wrapper": 362,
        "main": 936,
        "run": 927,
        "call": 152,
        "launch": 289,
        "agent_run": 280,
        "metrics": 138,
        "invoke": 722,
        "sleep": 881,
        "handler": 84,
        "received": 731,
    },
    (2, 12): {
        "banner": 866,
        "close": 1011,
        "failed": 985,
        "run_module": 1024,
        "wrapper": 367,
        "main": 1020,
        "run": 1011,
        "call": 194,
        "launch": 375,
        "agent_run": 366,
        "metrics": 138,
        "invoke": 751,
        "sleep": 910,
        "handler": 84,
        "received": 760,
    },
}


def line_table(table: dict[Ver, dict[str, int]], v: Ver) -> dict[str, int]:
    """The newest entry of ``table`` that is not newer than ``v``."""
    best = max(k for k in table if k <= v)
    return table[best]


def pgnccl_line(v: Versions, key: str) -> int:
    """Line number of a ProcessGroupNCCL.cpp log call for this torch release."""
    return line_table(PGNCCL_LINES, v.t)[key]


def elastic_line(v: Versions, key: str) -> int:
    """Line number of a torch.distributed.elastic / run.py call for this torch release."""
    return line_table(ELASTIC_LINES, v.t)[key]
