"""Every fix reads as one piece of advice: no step said twice, none the job's facts rule out.

Checked on every bundled sample, every committed JSON snapshot and every wild case, one test
per job: the verdict's fix and each advisory's fix are cut into sentences; no sentence may
repeat an earlier one (a topic already covered, or most of its words) and no sentence may state
a condition the job's facts contradict (a Blackwell/0.12 note on a Hopper job, `uv run` to a
conda or container python, "rerun with the Flight Recorder variables" when the dumps were read,
"every node must get the same MASTER_PORT" when the nodes' ports agree, a port check on a host
that is not the master, "resubmit from the last one" when the checkpoints were node-local).
The whole report of each job is checked too (:func:`report_problems`): no sentence repeated
within the verdict or within an advisory, no advice naming a host outside the allocation the
logs show, no step the leading advisory makes irrelevant, no "Nothing to fix" beside a launch
mistake.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import regex

from analyzer.api import analyze
from analyzer.decide.fixfacts import (
    allocation_hosts,
    checkpoints_node_local,
    is_address,
    ports_agree,
    uv_missing,
)
from analyzer.decide.fixsteps import catalog_steps, contradicted, repeats, sentences, topics_of
from tests.helpers import ROOT, SAMPLE_LOGS, SAMPLES, WILD, builtin_catalog, fast_share

SNAPSHOTS = ROOT / "tests" / "snapshots"


class _Facts:
    def __init__(self, values: dict[str, Any], dumps: bool) -> None:
        self.values, self.dumps = values, dumps

    def get(self, key: str) -> Any:
        return self.dumps if key == "flight_recorder_dumps" else self.values.get(key)


def problems(fixes: list[str], facts: _Facts) -> list[str]:
    out = []
    for fix in fixes:
        out += [f"repeats {b!r} after {a!r}" for a, b in repeats(fix)]
        out += [f"contradicted by the facts: {s.text!r}" for s in catalog_steps(fix)
                if contradicted(s.when, facts)]
    return out


def _key(sentence: str) -> str:
    return regex.sub(r"\W+", " ", sentence).strip().lower()


def _twice(*texts: str) -> list[str]:
    """Sentences said twice (word for word) across ``texts``."""
    seen: set[str] = set()
    out = []
    for s in (s for t in texts for s in sentences(t)):
        k = _key(s)
        if k in seen and len(k) > 20:
            out.append(f"said twice: {s!r}")
        seen.add(k)
    return out


def _named(host: str, text: str) -> bool:
    return bool(regex.search(rf"(?<![\w.-]){regex.escape(host)}(?![\w-])", text, regex.I))


def _foreign_hosts(a: Any) -> set[str]:
    """Hosts the job's lines name as a store or endpoint that are not hosts the job ran on."""
    hosts = allocation_hosts(a.rows, a.attributed.geometry)
    if not hosts:
        return set()
    named = {str(r.cap(k)).strip("[]()").split(".")[0].lower() for r in a.rows
             for k in ("store_host", "addr", "endpoint") if r.cap(k)}
    return {h for h in named if h and h not in hosts and not is_address(h)
            and "[" not in h and "," not in h}


_NOTHING = "nothing to fix"
_SAME_PORT = regex.compile(r"same MASTER_PORT|MASTER_PORT (?:matches|agrees)")
_UV = regex.compile(r"`uv (?:run|sync)")
_PORT_CHECK = regex.compile(r"port \d+ is free on (\S+)")
_LOOPBACK = regex.compile(r"^(?:127\.|localhost$|::1$)")


def _fragment(fix: str) -> bool:
    """A fix that is the first line of a multi-line shell command (a trailing backslash, an
    unclosed quote outside backticks)."""
    bare = regex.sub(r"`[^`]*`", "", fix).strip()
    command = regex.match(r"(?:--?\w|srun\b|export\b|bash\b|torchrun\b|python)", bare)
    return bare.endswith("\\") or bool(command and (bare.count("'") % 2 or bare.count('"') % 2))


def _port_checks(a: Any, said: list[str]) -> list[str]:
    """A port check on a host outside the allocation, or on the loopback address as a node
    other than node 0 saw it (its own address, not the master's)."""
    hosts = allocation_hosts(a.rows, a.attributed.geometry)
    v = a.diagnosis.verdict
    row = next((r for r in a.rows if v.pattern_id and r.pattern_id == v.pattern_id), None)
    out = []
    for s in said:
        m = _PORT_CHECK.search(s)
        host = m[1].strip("`().,").split(".")[0].lower() if m else ""
        if not m or host in ("the", "") or host in hosts or is_address(m[1].strip("`().,")):
            if m and _LOOPBACK.match(m[1]) and row is not None and row.node_index not in (0, None):
                out.append(f"port check on node {row.node_index}'s own loopback address: {s!r}")
            continue
        if hosts:
            out.append(f"port check on {m[1]}, not a host of the allocation: {s!r}")
    return out


def report_problems(a: Any) -> list[str]:
    """What contradicts itself in the whole report of ``a`` (an ``analyze`` result)."""
    d = a.diagnosis
    v = d.verdict
    out = _twice(v.cause, v.fix)
    for x in d.advisories:
        out += _twice(x.message, x.fix)
    fixes = [v.fix, *(x.fix for x in d.advisories)]
    for host in sorted(_foreign_hosts(a)):
        out += [f"advice names {host}, not a host of the allocation: {f!r}"
                for f in fixes if _named(host, f)]
    said = [s for f in fixes for s in sentences(f)]
    if ports_agree(a.rows) is True:
        out += [f"MASTER_PORT sentence where the nodes' ports agree: {s!r}"
                for s in said if _SAME_PORT.search(s)]
    if checkpoints_node_local(a.rows):
        out += [f"resubmit from node-local checkpoints: {s!r}" for s in said
                if "resubmit from the last" in s]
    if uv_missing(a.rows):
        out += [f"uv advice where uv is missing: {s!r}" for s in said if _UV.search(s)]
    out += _port_checks(a, said)
    lead = next((x for x in d.advisories if x.explains_verdict and x.drops
                 and v.fix.lower().startswith(x.fix[:30].lower())), None)
    if lead is not None:
        out += [f"step the leading [{lead.rule}] makes irrelevant: {s!r}"
                for s in sentences(v.fix)[1:] if topics_of(s) & lead.drops]
    out += [f"a fragment of a script line, not an instruction: {f!r}" for f in fixes
            if _fragment(f)]
    mistakes = [x for x in d.advisories if x.severity == "error"]
    if _NOTHING in v.fix.lower() and mistakes:
        out.append(f"'Nothing to fix' beside the launch mistake [{mistakes[0].rule}]")
    return out


def _job_problems(d: Path | list[Path]) -> list[str]:
    a = analyze(d, catalog=builtin_catalog(), workers=1)
    dumps = any(r.cap("fr_group") for r in a.rows)
    fixes = [a.diagnosis.verdict.fix] + [x.fix for x in a.diagnosis.advisories]
    rows = a.rows
    launch = {"ports_agree": ports_agree(rows),
              "checkpoints_node_local": checkpoints_node_local(rows) or None,
              "uv_missing": uv_missing(rows) or None}
    facts = {**dict(a.facts.values), **{k: v for k, v in launch.items() if v is not None}}
    return problems(fixes, _Facts(facts, dumps)) + report_problems(a)


JOBS = sorted({*(p.parent for p in SAMPLE_LOGS.glob("*/*/expected.toml")),
               *(p.parent for p in WILD.glob("*/expected.toml"))})
"""Every bundled job: the samples (sample_logs/*/*/) and the wild cases (tests/wild/*/)."""


def _files(job: Path) -> Path | list[Path]:
    """A wild case is its log files (not its expected.toml); a sample is its directory."""
    if job.parent == WILD:
        return sorted(p for p in job.iterdir() if p.name != "expected.toml")
    return job


@pytest.mark.parametrize(
    "job",
    [  # every sample in the fast loop; every second wild case (all under -m "", as CI runs)
        *(j for j in JOBS if j.parent != WILD),
        *fast_share([j for j in JOBS if j.parent == WILD], 5, lambda p: p.name),
    ],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_report_is_coherent(job: Path) -> None:
    assert _job_problems(_files(job)) == []


@pytest.mark.parametrize("snap", sorted(SNAPSHOTS.glob("*.json")), ids=lambda p: p.name)
def test_snapshot_fixes_are_coherent(snap: Path) -> None:
    d = json.loads(snap.read_text())
    fixes = [d["verdict"]["fix"]] + [x["fix"] for x in d.get("advisories", [])]
    assert problems(fixes, _Facts(d.get("facts") or {}, False)) == []


def test_every_bundled_job_is_checked() -> None:
    assert len([j for j in JOBS if j.parent == WILD]) > 100
    assert set(SAMPLES) <= set(JOBS)


def test_the_check_finds_a_repeat_and_a_contradiction() -> None:
    """The check itself: the OOM fix's generic sentence after the tailored one, a Blackwell
    upgrade note on a Hopper job, `uv run` to a conda job, a rerun with dumps read."""
    oom = ("Rank 5: lower --micro-batch-size from 4 to 2; enable activation recomputation "
           "(--recompute-granularity selective). Reduce memory per GPU: lower "
           "--micro-batch-size, enable --recompute-granularity full.")
    assert problems([oom], _Facts({}, False))
    note = ("Megatron core 0.12.x also asserts with TP>1 on Blackwell (operator-precedence bug, "
            "fixed in 0.13): upgrade or set the variable.")
    assert problems([note], _Facts({"gpu_generation": "Hopper"}, False))
    assert problems([note], _Facts({"gpu_generation": "Blackwell"}, False))  # no version shown
    assert not problems([note], _Facts({"gpu_generation": "Blackwell",
                                        "megatron_version": "0.12.1"}, False))
    uv = "Launch with `uv run python -m torch.distributed.run` (not a bare `torchrun`)."
    assert problems([uv], _Facts({"python_env": "conda"}, False))
    assert not problems([uv], _Facts({"python_env": "venv"}, False))
    rerun = "Rerun with TORCH_NCCL_TRACE_BUFFER_SIZE=2000 and TORCH_NCCL_DUMP_ON_TIMEOUT=1."
    assert problems([rerun], _Facts({}, True)) and not problems([rerun], _Facts({}, False))


def test_the_report_check_finds_what_contradicts_itself() -> None:
    """The whole-report check on synthetic events (the catalog's client-timeout format): a
    login node named in advice, a MASTER_PORT sentence where both nodes show port 29500, a
    sentence said twice, "Nothing to fix" beside a launch mistake."""
    from types import SimpleNamespace

    from analyzer.decide.advisory import Advisory
    from analyzer.model.event import from_flat
    from analyzer.shape.attribute import Geometry

    text = ("The client socket has timed out after 600000ms while trying to connect to "
            "(login-01, 29500).")
    rows = [from_flat({"file": "slurm-1.out", "line": n + 1, "node_index": n,
                       "node": f"node00{n + 1}", "host": f"node00{n + 1}", "store_host":
                       "login-01", "port": "29500", "text": text}) for n in (0, 1)]
    verdict = SimpleNamespace(
        cause="A rank could not reach the store. A rank could not reach the store.",
        fix="Check that port 29500 is free on login-01. Every node must get the same "
            "MASTER_PORT. Nothing to fix.", pattern_id=None)
    adv = Advisory("master-addr", "MASTER_ADDR names a login node", "set MASTER_ADDR",
                   severity="error")
    a = SimpleNamespace(rows=rows, attributed=SimpleNamespace(geometry=Geometry()),
                        diagnosis=SimpleNamespace(verdict=verdict, advisories=[adv]))
    found = "\n".join(report_problems(a))
    assert "said twice" in found
    assert "advice names login-01" in found and "port check on login-01" in found
    assert "MASTER_PORT sentence where the nodes' ports agree" in found
    assert "'Nothing to fix' beside the launch mistake [master-addr]" in found
    assert _fragment("--log-dir /shared/torchrun-logs --redirects 3 \\")
    assert _fragment("srun --ntasks-per-node=1 --label bash -c '")
    assert not _fragment("keep the workers' output: add --tee 3")
    assert not _fragment("run one srun task per node: `srun --label bash -c ' …`")


def test_the_check_finds_a_step_that_restates_the_leading_instruction() -> None:
    """The leading advisory says what to do (one srun task per node); the catalog's "check
    that every node started (srun --ntasks-per-node=1 …)" after it asks the question the
    advisory answered (two-agents-per-node-per-task's fix before the repair)."""
    from analyzer.decide.fixsteps import assemble, step

    lead = ("Run one srun task (one launcher) per node: `srun --ntasks=\"$SLURM_NNODES\" "
            "--ntasks-per-node=1 bash -c ' …`.")
    check = ("Check that every node started (srun --ntasks-per-node=1, all nodes in the "
             "allocation), that --nnodes/--nproc-per-node match the allocation, and the missing "
             "nodes' logs for start-up errors.")
    assert problems([f"{lead} {check}"], _Facts({}, False))
    assert not problems([check], _Facts({}, False))
    assert assemble([step(lead, *topics_of(lead)), *catalog_steps(check)], {}) == lead
