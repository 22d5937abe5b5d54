"""Launch advisories: tie what the logs show to the launch guide's rules.

The diagnosis reads the job's batch script when it has one (``--script PATH``, or an sbatch
script in the log directory: a ``*.sbatch``/``*.slurm``/``*.sh``/``*.job`` file with
``#SBATCH`` lines, e.g. what ``scontrol write batch_script`` wrote), lints it, and joins the
findings with the events: a failed chdir and ``can't open file`` (worktree not shared), the raw
node list as rendezvous endpoint, ``uv`` building ``.venv`` inside the job, Megatron starting
from random, several rank-0 outputs (independent worlds), Megatron's CUDA_DEVICE_MAX_CONNECTIONS
warnings. Each advisory is ``{rule, message, fix, evidence}``; those about a rule whose breach
explains the verdict's category say so (``explains_verdict``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from analyzer.decide import launchlogs
from analyzer.lint import lint_text
from analyzer.lint.config import ConfigError, LintConfig, load_config
from analyzer.lint.rules import Finding
from analyzer.model.event import Event

SCRIPT_SUFFIXES = (".sbatch", ".slurm", ".sh", ".job", ".batch")
MAX_SCRIPT_BYTES = 1 << 20

VERDICT_RULES: dict[str, frozenset[str]] = {
    "rendezvous": frozenset({"master-addr", "worker-group", "tasks-per-node", "allocation"}),
    "collective_timeout": frozenset({"worker-group", "tasks-per-node", "allocation",
                                     "master-addr"}),
    "network": frozenset({"master-addr", "tasks-per-node"}),
    "import_error": frozenset({"launcher", "uv-sync", "node-local-path", "container-mounts"}),
    "storage": frozenset({"node-local-path", "container-mounts"}),
    "checkpoint": frozenset({"node-local-path"}),
    "cuda_device_max_connections": frozenset({"max-connections"}),
    "slurm_time_limit": frozenset({"uv-sync"}),
}
"""Which broken launch rules can explain a verdict of each category."""


@dataclass
class Advisory:
    """One launch-rule observation about the job."""

    rule: str
    message: str
    fix: str
    evidence: list[str] = field(default_factory=list)
    severity: str = "warning"
    explains_verdict: bool = False
    patterns: tuple[str, ...] = ()  # the catalog patterns whose events are the evidence
    explains: frozenset[str] = frozenset()  # verdict categories it explains whatever the rule
    drops: frozenset[str] = frozenset()  # topics of the verdict's fix it makes irrelevant

    def as_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"rule": self.rule, "message": self.message, "fix": self.fix,
                "evidence": self.evidence, "severity": self.severity,
                "explains_verdict": self.explains_verdict}


def find_script(paths: Sequence[Path]) -> Path | None:
    """An sbatch script directly inside one of the job directories ``paths``, or None."""
    for p in paths:
        if not p.is_dir():
            continue
        try:
            cands = sorted(c for c in p.iterdir() if c.suffix in SCRIPT_SUFFIXES and c.is_file())
        except OSError:
            continue
        for c in cands:
            try:
                with c.open("rb") as fh:
                    head = fh.read(16384)
            except OSError:
                continue
            if b"#SBATCH" in head:
                return c
    return None


def read_script(path: Path) -> str | None:
    """The script's text, or None when it cannot be read (or is too large to be a script)."""
    try:
        data = path.read_bytes()[: MAX_SCRIPT_BYTES + 1]
    except OSError:
        return None
    if len(data) > MAX_SCRIPT_BYTES:
        return None
    return data.decode("utf-8", errors="replace")


def _where(r: Event) -> str:
    return f"{r.file}:{r.line}: {(r.text or '').strip()}"


def _nodes(rows: Iterable[Event]) -> list[str]:
    return sorted({str(r.node or r.host or "?") for r in rows})


def _finding(findings: list[Finding], rule: str, needle: str = "") -> Finding | None:
    return next((f for f in findings if f.rule == rule and needle in f.message), None)


def _evidence_of(lines: list[str]) -> Callable[[Finding], str]:
    """``script:line: the script's line`` for a finding of the script with ``lines``."""

    def ev(f: Finding) -> str:
        text = lines[f.line - 1].strip() if 1 <= f.line <= len(lines) else f.message
        return f"{f.file}:{f.line}: {text}"

    return ev


def _tagged(rows: list[Event], tag: str) -> list[Event]:
    return [r for r in rows if tag in r.tags]  # ``Event.tagged``, without a call per row


def _ids(rows: Iterable[Event]) -> tuple[str, ...]:
    """The pattern ids of ``rows``, once each, in order (an advisory's evidence patterns)."""
    return tuple(dict.fromkeys(str(r.pattern_id) for r in rows))


def _script_ev(f: Finding | None, script_evidence: Callable[[Finding], str]) -> list[str]:
    return [script_evidence(f)] if f is not None else []


def _worktree(
    rows: list[Event], findings: list[Finding], script_evidence: Callable[[Finding], str]
) -> Advisory | None:
    """A failed chdir or a training script python could not open: the worktree is not shared."""
    chdir = _tagged(rows, "workdir-missing")
    cant = _tagged(rows, "script-missing")
    if not (chdir or cant):
        return None
    f = _finding(findings, "node-local-path", "worktree") or _finding(
        findings, "node-local-path")
    paths = sorted({str(r.cap("path")) for r in chdir if r.cap("path")})
    where = "node(s) " + ", ".join(_nodes(chdir or cant))
    msg = (f"the job's directory {', '.join(paths)} is missing on {where}: slurmstepd ran the "
           "tasks from /tmp" if chdir else
           f"the training script is missing on {where}")
    if cant:
        msg += f", and python could not open {cant[0].cap('path')}"
    msg += "; the worktree is not on storage every node sees"
    ev = _script_ev(f, script_evidence) + [_where(r) for r in (chdir[:1] + cant[:1])]
    return Advisory("node-local-path", msg, f.fix if f else
                    "cd into a Megatron-LM worktree on shared storage (NFS, Lustre) "
                    "in the sbatch script", ev, "error", patterns=_ids(chdir + cant))


def _endpoint(
    rows: list[Event], findings: list[Finding], script_evidence: Callable[[Finding], str]
) -> Advisory | None:
    """The rendezvous endpoint is the raw node list (or no host name at all)."""
    ep = _tagged(rows, "endpoint-hostname")
    if not ep:
        return None
    f = _finding(findings, "master-addr")
    endpoint = str(ep[0].cap("endpoint") or "")
    raw = "[" in endpoint or "," in endpoint
    msg = (f"the rendezvous endpoint {endpoint} is the raw SLURM node list"
           if raw else f"the rendezvous endpoint {endpoint} is not a host name")
    msg += f" (on {len(_nodes(ep))} node(s)): MASTER_ADDR is not taken from scontrol"
    ev = _script_ev(f, script_evidence) + [_where(r) for r in ep[:2]]
    return Advisory("master-addr", msg, f.fix if f else
                    'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" '
                    "| head -n1)", ev, "error", patterns=_ids(ep))


def _venv(
    rows: list[Event], findings: list[Finding], script_evidence: Callable[[Finding], str]
) -> Advisory | None:
    """uv built the virtual environment inside the job."""
    # the venvs created (a `path`) first, then the packages installed
    uv = sorted(_tagged(rows, "venv-build"), key=lambda r: r.cap("path") is None)
    if not uv:
        return None
    f = _finding(findings, "uv-sync")
    n = len(_nodes(uv))
    msg = (f"uv built the virtual environment inside the job on {n} node(s) "
           "(`Creating virtual environment`, `Installed N packages`): every run pays for it, "
           "and nodes racing on one .venv can break it")
    ev = _script_ev(f, script_evidence) + [_where(r) for r in uv[:3]]
    return Advisory("uv-sync", msg, f.fix if f else
                    "run `uv sync` once before sbatch; use `uv run --no-sync` under srun", ev)


def _fresh_start(
    rows: list[Event], findings: list[Finding], script_evidence: Callable[[Finding], str]
) -> Advisory | None:
    """Megatron found no checkpoint and started from random."""
    missing = [r for r in _tagged(rows, "checkpoint-load") if r.cap("no_checkpoint")]
    if not missing:
        return None
    f = _finding(findings, "node-local-path", "--load") or _finding(
        findings, "node-local-path", "--save")
    path = missing[0].cap("path")
    msg = (f"Megatron found no checkpoint ({path}) and started from random: training "
           "restarted from iteration 1")
    if f is not None:
        msg += "; --load/--save are on node-local storage, so a requeue on other nodes "\
            "finds nothing"
    ev = _script_ev(f, script_evidence) + [_where(r) for r in missing[:1]]
    return Advisory("node-local-path" if f else "restart-from-scratch", msg,
                    f.fix if f else "check --load points at the directory --save "
                    "wrote, on shared storage; add --exit-on-missing-checkpoint to "
                    "fail instead of starting over", ev,
                    explains=frozenset({"slurm_time_limit"}))


def _maxconn(
    rows: list[Event], findings: list[Finding], script_evidence: Callable[[Finding], str]
) -> Advisory | None:
    """Megatron warned about CUDA_DEVICE_MAX_CONNECTIONS."""
    warn = _tagged(rows, "maxconn-warning")
    if not warn:
        return None
    f = _finding(findings, "max-connections")
    return Advisory(
        "max-connections",
        "Megatron warned about CUDA_DEVICE_MAX_CONNECTIONS: the parallelism settings want "
        "conflicting values, so one of them runs slower",
        f.fix if f else "pick the value for the parallelism you favour (1 for TP/CP, 32 for "
        "MoE overlap, unset or > 1 for FSDP)",
        _script_ev(f, script_evidence) + [_where(r) for r in warn[:1]],
    )


def _worlds(
    rows: list[Event], findings: list[Finding], script_evidence: Callable[[Finding], str]
) -> Advisory | None:
    """Several rank-0 outputs in one attempt: independent worlds."""
    starts = [r for r in _tagged(rows, "megatron-start") if r.cap("world_init")]
    worlds: dict[Any, set[Any]] = defaultdict(set)
    for r in starts:
        worlds[r.attempt].add((r.host, r.node_index, r.file))
    many = {k: v for k, v in worlds.items() if len(v) > 1}
    if not many:
        return None
    f = _finding(findings, "worker-group")
    n = max(len(v) for v in many.values())
    return Advisory(
        "worker-group",
        f"{n} rank-0 outputs in one run: the nodes started {n} independent worlds, each "
        "training its own copy of the model",
        f.fix if f else '--nnodes "$NNODES" --node-rank "$SLURM_NODEID" --master-addr '
        '"$MASTER_ADDR" (no --standalone)',
        _script_ev(f, script_evidence) + [_where(r) for r in starts[:n]],
    )


_FROM_EVENTS = (_worktree, _endpoint, _venv, _fresh_start, _maxconn, _worlds)
"""The advisories the events alone can raise, in their order in the report."""


def _from_events(
    rows: list[Event], findings: list[Finding], script_evidence: Callable[[Finding], str]
) -> list[Advisory]:
    found = (advise(rows, findings, script_evidence) for advise in _FROM_EVENTS)
    return [a for a in found if a is not None]


def _megatron_world_size(rows: list[Event]) -> int | None:
    """The world size Megatron printed (``using world size: N``), if it did."""
    for r in _tagged(rows, "world-size-report"):
        ws = r.role_of("world_size") or ""
        if ws.isdigit():
            return int(ws)
    return None


def _world_size(ws: int | None, findings_job: Any,
                geometry: tuple[int | None, int | None]) -> Advisory | None:
    if ws is None:
        return None
    n_log, per_log = geometry
    if n_log and per_log and ws != n_log * per_log:
        return Advisory(
            "allocation",
            f"Megatron ran with world size {ws}, but the logs show {n_log} node(s) × {per_log} "
            f"workers = {n_log * per_log}: the workers did not form one world of the whole "
            "allocation",
            "one worker group: --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" with "
            "NNODES=$SLURM_NNODES",
            [f"world size {ws} (Megatron); {n_log} × {per_log} from the launcher and srun "
             "labels"],
        )
    if findings_job is None:
        return None
    started = _workers_started(findings_job)
    if started is not None and ws != started[0]:
        return Advisory(
            "worker-group",
            f"Megatron ran with world size {ws}, but the script starts {started[0]} workers "
            f"({started[1]}): the launchers did not form one worker group",
            '--nnodes "$NNODES" (= the number of srun tasks) --node-rank "$SLURM_NODEID" on '
            "every node, one srun task per node",
            [f"world size {ws} (Megatron); {started[1]} in the script"],
        )
    nodes = findings_job.nodes
    gpn = findings_job.gpus_per_node()
    if nodes and gpn and ws != nodes[0] * gpn[0]:
        return Advisory(
            "allocation",
            f"the job ran with world size {ws}, but the allocation is {nodes[0]} node(s) × "
            f"{gpn[0]} GPUs = {nodes[0] * gpn[0]}",
            "NNODES=$SLURM_NNODES, GPUS_PER_NODE = GPUs per node, WORLD_SIZE = NNODES × "
            "GPUS_PER_NODE",
            [f"script: line {nodes[1]} (--nodes), line {gpn[1]} (GPUs per node)"],
        )
    return None


def _shared_hosts(task_hosts: dict[int, str]) -> dict[str, list[int]]:
    """Hosts that ran more than one srun task."""
    by: dict[str, list[int]] = defaultdict(list)
    for task, host in sorted(task_hosts.items()):
        by[host].append(task)
    return {h: t for h, t in by.items() if len(t) > 1}


def _workers_started(job: Any) -> tuple[int, str] | None:
    """(workers, how) the script starts: srun tasks × the launcher's --nproc-per-node."""
    srun = job.main_srun
    if srun is None or not srun.launchers:
        return None
    npn = srun.launchers[0].opts.get("nproc-per-node")
    per = int(npn.value) if npn is not None and npn.value.isdigit() else None
    nt = job.option(srun, "ntasks")
    tpn = job.option(srun, "ntasks-per-node")
    nodes = job.nodes
    tasks = None
    if nt and nt[0].isdigit():
        tasks = int(nt[0])
    elif nodes and tpn and tpn[0].isdigit():
        tasks = nodes[0] * int(tpn[0])
    elif nodes:
        tasks = nodes[0]
    if per is None or tasks is None:
        return None
    return tasks * per, f"{tasks} srun task(s) × --nproc-per-node {per}"


def _shown(path: Path, paths: Sequence[Path]) -> str:
    """The script's name as evidence shows it: relative to the job directory that holds it
    (as every other evidence line), else as given."""
    for p in paths:
        try:
            return str(path.resolve().relative_to(p.resolve()))
        except (ValueError, OSError):
            continue
    return str(path)


@dataclass
class _Script:
    """The job's batch script as the advisories use it (all empty when there is none)."""

    path: Path | None
    text: str | None
    findings: list[Finding]
    evidence: Callable[[Finding], str]
    job: Any


def _read_lint(
    paths: Sequence[Path], script: Path | None, cfg: LintConfig | None, gpu_name: str | None
) -> _Script:
    """Find, read, lint and parse the job's batch script."""
    from analyzer.lint.job import read_job
    from analyzer.lint.script import parse_script

    if cfg is None:
        try:
            cfg = load_config()
        except ConfigError:
            cfg = LintConfig()
    if gpu_name:
        cfg = replace(cfg, gpu_hint=gpu_name)
    path = script or find_script(paths)
    text = read_script(path) if path is not None else None
    if path is None or text is None:
        return _Script(path, None, [], _evidence_of([]), None)
    findings = lint_text(text, _shown(path, paths), cfg)
    ev = _evidence_of(text.replace("\r\n", "\n").split("\n"))
    return _Script(path, text, findings, ev, read_job(parse_script(text, str(path))))


def _port_in_use(rows: list[Event], sc: _Script,
                 task_hosts: dict[int, str] | None) -> Advisory | None:
    """Several srun tasks on one host, and the second launcher's store port was in use."""
    shared = _shared_hosts(task_hosts or {})
    inuse = _tagged(rows, "port-in-use")
    tpn = _finding(sc.findings, "tasks-per-node")
    if not (shared and inuse and (sc.text is None or tpn is not None)):
        return None
    host, tasks = next(iter(shared.items()))
    return Advisory(
        "tasks-per-node",
        f"srun tasks {', '.join(map(str, tasks))} ran on the same host {host}: several "
        "launchers per node, and the second one's store port was already in use "
        "(EADDRINUSE)",
        tpn.fix if tpn else "#SBATCH --ntasks-per-node=1",
        ([sc.evidence(tpn)] if tpn else []) + [_where(r) for r in inuse[:1]],
        "error",
        patterns=tuple(sorted({str(r.pattern_id) for r in inuse})),
    )


def _advisory(f: launchlogs.Found) -> Advisory:
    return Advisory(f.rule, f.message, f.fix, f.evidence, f.severity, patterns=f.patterns,
                    explains=f.explains, drops=f.drops)


def _from_content(out: list[Advisory], rows: list[Event], sc: _Script,
                  nodes: int | None) -> None:
    """The launch mistakes the logs' content shows (``launchlogs``): a worlds advisory unless
    one says it already; the others replace a script finding of their rule (they say more)."""
    rules = {a.rule for a in out}
    nn = launchlogs.nnodes_mismatch(rows, sc.job, nodes)
    found = [
        launchlogs.independent_worlds(rows) if "worker-group" not in rules and nn is None
        else None,
        nn,
        launchlogs.worker_output_missing(rows, sc.job),
        launchlogs.master_addr_per_node(rows) if "master-addr" not in rules else None,
    ]
    for f in found:
        if f is None:
            continue
        same = next((a for a in out if a.rule == f.rule), None)
        if same is not None:  # the content says more than the script's finding
            out.remove(same)
        out.append(_advisory(f))


def _add_world_size(out: list[Advisory], ws: Advisory | None) -> None:
    """The world-size advisory, merged into the worker-group one when there is one."""
    if ws is None:
        return
    group = next((a for a in out if a.rule == "worker-group"), None)
    if group is not None:
        group.evidence += ws.evidence
    else:
        out.append(ws)


def _add_findings(out: list[Advisory], sc: _Script) -> None:
    """An advisory for each script finding (not a note) whose rule none says yet."""
    covered = {a.rule for a in out}
    for f in sc.findings:
        if f.severity == "note" or f.rule in covered:
            continue
        covered.add(f.rule)
        out.append(Advisory(f.rule, f"the batch script breaks a launch rule: {f.message}",
                            f.fix, [sc.evidence(f)], f.severity))


def _mark_verdict(out: list[Advisory], rows: list[Event], verdict_category: str,
                  verdict_pattern: str | None) -> None:
    """Mark the advisories that explain the verdict; the verdict's line is their evidence."""
    tied = VERDICT_RULES.get(verdict_category, frozenset())
    verdict_rows = [r for r in rows if verdict_pattern and r.pattern_id == verdict_pattern]
    for a in out:
        a.explains_verdict = (a.rule in tied or verdict_category in a.explains
                              or (verdict_pattern is not None and verdict_pattern in a.patterns))
        if a.explains_verdict and not a.patterns and verdict_rows:
            a.evidence.append(_where(verdict_rows[0]))


def launch_advisories(
    rows: list[Event],
    verdict_category: str,
    paths: Sequence[Path],
    script: Path | None = None,
    cfg: LintConfig | None = None,
    verdict_pattern: str | None = None,
    geometry: tuple[int | None, int | None] = (None, None),
    gpu_name: str | None = None,
    task_hosts: dict[int, str] | None = None,
) -> tuple[list[Advisory], str | None]:
    """Advisories for one job, and the script they used (None when there was none)."""
    sc = _read_lint(paths, script, cfg, gpu_name)
    out = _from_events(rows, sc.findings, sc.evidence)
    port = _port_in_use(rows, sc, task_hosts)
    if port is not None:
        out.append(port)
    _from_content(out, rows, sc, geometry[0])
    _add_world_size(out, _world_size(_megatron_world_size(rows), sc.job, geometry))
    _add_findings(out, sc)
    _mark_verdict(out, rows, verdict_category, verdict_pattern)
    out.sort(key=lambda a: (not a.explains_verdict, a.severity != "error"))
    return out, (str(sc.path) if sc.text is not None else None)
