"""Per-node launch facts from the variables a job script prints about itself.

A script's own ``echo "MASTER_ADDR=$MASTER_ADDR NODE_RANK=$NODE_RANK ..."`` in each srun task,
or an ``env | grep`` dump, arrives as a line whose ``value`` capture is a run of ``KEY=VALUE``
assignments (``patterns/launch.toml``). Which variable means which fact is data
(:data:`ENV_FACTS`); the node a line speaks for is its srun label, else the node rank the line
itself prints. Lines that name no node (an unlabelled env dump) hold facts of the whole job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.decide.rowmemo import per_rows
from analyzer.model.event import Event

ENV_FACTS: dict[str, str] = {
    "MASTER_ADDR": "master_addr",
    "MASTER_PORT": "master_port",
    "NODE_RANK": "node_rank",
    "SLURM_NODEID": "node_rank",
    "NNODES": "nnodes",
    "GPUS_PER_NODE": "nproc_per_node",
    "NPROC_PER_NODE": "nproc_per_node",
    "SLURM_NNODES": "allocation_nodes",
    "SLURM_JOB_NUM_NODES": "allocation_nodes",
    "SLURM_JOB_NODELIST": "nodelist",
    "SLURM_NODELIST": "nodelist",
}
"""The launch guide's variables and the fact each one states (the first named wins a line)."""

JOB = "job"
"""The key of facts no node claims."""


@dataclass
class PrintedFacts:
    """What the job script printed: node -> fact -> (value, line)."""

    nodes: dict[str, dict[str, tuple[str, Event]]] = field(default_factory=dict)

    def per_node(self, fact: str) -> dict[str, tuple[str, Event]]:
        """node -> (value, line) of one fact, for the nodes that printed it."""
        return {n: f[fact] for n, f in self.nodes.items() if n != JOB and fact in f}

    def values(self, fact: str) -> set[str]:
        """Every value printed for ``fact``, by any node or the job."""
        return {f[fact][0] for f in self.nodes.values() if fact in f}

    def node_ranks(self) -> set[str]:
        """The node ranks the printing tasks claimed."""
        return {n for n in self.nodes if n != JOB}


def assignments(text: str) -> dict[str, str]:
    """``KEY=VALUE`` pairs of a printed line, known variables mapped to their facts."""
    out: dict[str, str] = {}
    for token in text.split():
        key, eq, value = token.partition("=")
        fact = ENV_FACTS.get(key)
        if eq and fact and fact not in out:
            out[fact] = value
    return out


def _node_of(r: Event, said: dict[str, str]) -> str:
    """The node a line speaks for: its srun label (the task id, the node with one task per
    node), else the node rank the line prints."""
    if r.node_index is not None:
        return str(r.node_index)
    rank = said.get("node_rank", "")
    return rank if rank.isdigit() else JOB


@per_rows
def printed_facts(rows: Sequence[Event]) -> PrintedFacts:
    """The launch facts of every line that prints launch variables (read by the ``arg`` and
    ``value`` captures: a variable name and its assignments)."""
    out = PrintedFacts()
    for r in rows:
        if "arg" not in r.captures:
            continue  # most lines: no variable printed
        arg, value = r.cap("arg"), r.cap("value")
        if not arg or not value or arg not in ENV_FACTS:
            continue
        said = assignments(str(value))
        node = _node_of(r, said)
        facts = out.nodes.setdefault(node, {})
        for fact, v in said.items():
            facts.setdefault(fact, (v, r))
    return out
