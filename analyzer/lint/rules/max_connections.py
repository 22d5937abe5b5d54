"""The ``max-connections`` rule: CUDA_DEVICE_MAX_CONNECTIONS against the GPU generation and the
parallelism (TP/CP, FSDP, MoE overlap) Megatron is started with."""

from __future__ import annotations

import re
from dataclasses import dataclass

from analyzer.lint.config import LintConfig
from analyzer.lint.expand import Field
from analyzer.lint.launchplan import Job, Launcher
from analyzer.lint.rules.base import Finding, as_int, corrected, finding, launch_var

_VAR = "CUDA_DEVICE_MAX_CONNECTIONS"
_BLACKWELL = re.compile(r"(?<![a-z0-9])(g?b[123]00\w*|blackwell|sm_?1[0-2]\d|rtx.?pro.?6000|"
                        r"rtx.?50[6-9]0|thor)(?![a-z0-9])", re.I)
_PRE_BLACKWELL = re.compile(
    r"(?<![a-z0-9])(a100\w*|a800|a30|a40|a10g?|a16|a2|h100\w*|h200\w*|h800|h20|gh200|l4|l40s?|"
    r"v100\w*|t4|p100|p40|ampere|hopper|volta|ada|turing|sm_?[5-9]\d|rtx.?[2-4]0[6-9]0\w*|"
    r"a[456]000|rtx.?[a-z]?[456]000)(?![a-z0-9])", re.I)
_TP = "tensor-model-parallel-size"
_CP = "context-parallel-size"
_FSDP = ("use-torch-fsdp2", "use-megatron-fsdp", "use-custom-fsdp")
_MOE_OVERLAP = "overlap-moe-expert-parallel-comm"
_MEGATRON_ARGS = ("num-layers", "save", "load")


def gpu_generation(job: Job, cfg: LintConfig) -> tuple[str | None, str]:
    """("blackwell" | "pre-blackwell" | None, how we know) for the job's GPUs."""
    cands = [(name, f"{src} {name} (line {line})") for name, line, src in job.gpu_types()]
    part = job.option(job.main_srun, "partition")
    if part:
        for p in part[0].split(","):
            if p in cfg.partitions:
                cands.append((cfg.partitions[p],
                              f"partition {p} = {cfg.partitions[p]} in {cfg.source or 'config'}"))
    if cfg.gpu_hint:
        cands.append((cfg.gpu_hint, f"the job's logs show {cfg.gpu_hint}"))
    for name, why in cands:
        if _BLACKWELL.search(name):
            return "blackwell", why
        if _PRE_BLACKWELL.search(name):
            return "pre-blackwell", why
    return None, "unknown GPU type"


def _mc_fix(job: Job, var: Field | None, value: str | None) -> str:
    """The export that sets the variable to ``value`` (None: unset it)."""
    if value is None:
        return f"unset {_VAR}   # or delete the export"
    text = f"export {_VAR}={value}"
    if var is not None and f"{_VAR}=" in job.script.line_text(var.line):
        return corrected(job, var.line, rf"{_VAR}=\S*", f"{_VAR}={value}", text)
    return text


@dataclass(frozen=True)
class _Launch:
    """What the rule weighs for one Megatron launch."""

    tp: int | None
    cp: int | None
    tp_cp: bool  # TP or CP > 1 (or not a number)
    fsdp: str | None  # the FSDP flag given, if any
    moe: bool  # --overlap-moe-expert-parallel-comm
    var: Field | None  # the variable's value when the launcher starts
    unconditional: bool  # exported whatever the job's shape
    line: int
    gen: str | None
    why: str
    unexported: bool = False  # set in the script without export: the launcher does not get it

    @property
    def have(self) -> str:
        """The value as the launcher gets it, in words."""
        if self.val is not None:
            return self.val
        return "set without export, so unset for the launcher" if self.unexported else "unset"

    @property
    def val(self) -> str | None:
        """The variable's value, None when unset."""
        return self.var.value if self.var is not None else None


def _size(args: dict[str, Field], key: str) -> int | None:
    """A parallel size: 1 when not given, None when not a number."""
    return as_int(args[key].value) if key in args else 1


def _unconditional(lz: Launcher, f: Field | None) -> bool:
    """True when the variable is set for every launch, not under a condition."""
    var = lz.step.env.get(_VAR)
    return f is not None and (var is None or not var.conditional or _VAR in lz.step.prefix)


def _launch(job: Job, lz: Launcher, gen: str | None, why: str) -> _Launch | None:
    """The facts for ``lz``, or None when it does not start Megatron."""
    a = lz.args
    if lz.script is None:
        return None
    tp, cp = _size(a, _TP), _size(a, _CP)
    tp_cp = ((tp or 2) > 1 or (cp or 2) > 1) if (_TP in a or _CP in a) else False
    fsdp = next((k for k in _FSDP if k in a), None)
    moe = _MOE_OVERLAP in a
    if not (tp_cp or fsdp or moe or any(k.startswith(_MEGATRON_ARGS) for k in a)):
        return None
    f = lz.env_value(_VAR)
    var = launch_var(job, lz, _VAR)  # the batch script's, when the srun task does not have it
    # the export's own line (not where a value it copies came from); a prefix: its word
    unexported = f is None and var is not None
    line = (f.line if _VAR in lz.step.prefix or var is None else var.line) if f else lz.first.at
    if unexported and var is not None:
        line = var.line
    return _Launch(tp, cp, tp_cp, fsdp, moe, f, _unconditional(lz, f), line, gen, why,
                   unexported)


def _moe(job: Job, c: _Launch) -> Finding | None:
    """MoE overlap wants 32, whatever TP/CP: the guide says 32 when the overlap is on, and
    NeMo's launcher keeps the variable off 1 for all-to-all overlap even with TP > 1."""
    if c.val == "32":
        return None
    why = ("1 serialises the all-to-all overlap streams (TP/CP > 1 does not make 1 right "
           "here)" if c.val == "1" and c.tp_cp else "the overlap streams serialise")
    return finding(
        job, "max-connections", "warning", c.line,
        f"--{_MOE_OVERLAP} wants {_VAR}=32 "
        f"(it is {c.have}): {why}",
        _mc_fix(job, c.var, "32"),
    )


def _fsdp(job: Job, c: _Launch) -> Finding | None:
    """FSDP asserts on 1."""
    if c.val != "1":
        return None
    return finding(
        job, "max-connections", "error", c.line,
        f"{_VAR}=1 with --{c.fsdp}: Megatron asserts that FSDP needs it unset or > 1",
        _mc_fix(job, c.var, None),
    )


def _tp_cp(job: Job, c: _Launch) -> Finding | None:
    """TP/CP > 1 needs 1 before Blackwell and nothing on Blackwell."""
    what = f"TP={c.tp}" + (f", CP={c.cp}" if c.cp and c.cp > 1 else "")
    if c.gen == "blackwell":
        if c.val is None or not c.unconditional:
            return None
        return finding(
            job, "max-connections", "note", c.line,
            f"{_VAR} is not needed on Blackwell ({c.why}); exported unconditionally it has no "
            "effect",
            _mc_fix(job, c.var, None),
        )
    if c.val == "1":
        return None
    have = c.have
    if c.gen == "pre-blackwell":
        return finding(
            job, "max-connections", "error", c.line,
            f"{what} on pre-Blackwell GPUs ({c.why}) and {_VAR} is {have}: Megatron asserts at "
            "start-up",
            _mc_fix(job, c.var, "1"),
        )
    return finding(
        job, "max-connections", "warning", c.line,
        f"{what} and {_VAR} is {have}; the GPU type is not named (--gres=gpu:TYPE:N, "
        "--constraint, or a partition map in the config): Megatron asserts on pre-Blackwell GPUs",
        _mc_fix(job, c.var, "1"),
    )


def _not_needed(job: Job, c: _Launch) -> Finding | None:
    """Exported although nothing needs it."""
    if c.val is None or not c.unconditional:
        return None
    return finding(
        job, "max-connections", "note", c.line,
        f"{_VAR} is exported but nothing needs it (TP = CP = 1, no FSDP, no MoE overlap)",
        _mc_fix(job, c.var, None),
    )


def _max_connections(job: Job, c: _Launch) -> Finding | None:
    """The one finding for a launch: the first of MoE overlap, FSDP, TP/CP that applies."""
    if c.moe:
        return _moe(job, c)
    if c.fsdp:
        return _fsdp(job, c)
    if c.tp_cp:
        return _tp_cp(job, c)
    return _not_needed(job, c)


def check_max_connections(job: Job, cfg: LintConfig) -> list[Finding]:
    """CUDA_DEVICE_MAX_CONNECTIONS against GPU generation, TP/CP, FSDP and MoE overlap."""
    gen, why = gpu_generation(job, cfg)
    out: list[Finding] = []
    for lz in job.launchers:
        c = _launch(job, lz, gen, why)
        f = _max_connections(job, c) if c is not None else None
        if f is not None:
            out.append(f)
    return out
