"""What PyTorch's own Flight Recorder analyzer (``torchfrtrace``) says about a recorded job.

    python -m harness.frtrace sample_logs/real/fr-wrong-op [...]

For each job directory with an ``fr/`` folder of pickle dumps, runs the ``torchfrtrace`` that
ships with the installed torch twice and writes its output, with the commands, to
``TORCHFRTRACE.md`` in the job directory (Markdown: the analyzer does not read it as a log):

1. on the dumps as recorded (gloo's dumps key ``pg_config`` by ``''``, which unmodified
   ``torchfrtrace`` cannot look up);
2. on a temporary copy whose ``pg_config`` key is repaired to the group name the entries carry
   (read with the analyzer's restricted loader, written back with ``pickle``), with
   ``--allow-incomplete-ranks`` so a missing dump does not stop it.
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from analyzer.flightrec.load import DumpError, find_dumps, parse_dump

REPO = Path(__file__).resolve().parent.parent


def _torchfrtrace() -> list[str]:
    exe = Path(sys.executable).with_name("torchfrtrace")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace"]


def repair_gloo_config(src: Path, dest: Path) -> int:
    """Copy the pickle dumps of ``src`` to ``dest`` with gloo's ``''`` pg_config key renamed
    after the group the entries name; returns how many dumps were repaired."""
    dest.mkdir(parents=True, exist_ok=True)
    fixed = 0
    for path in find_dumps(src):
        try:
            obj, fmt = parse_dump(path.read_bytes())
        except DumpError:
            shutil.copy(path, dest / path.name)
            continue
        if fmt != "pickle":
            continue
        cfg = obj.get("pg_config") or {}
        if "" in cfg:
            entry = cfg.pop("")
            names = {str(e["process_group"][0]): str(e["process_group"][1]) for e in obj["entries"]}
            for name, desc in names.items():
                cfg[name] = {**entry, "name": name, "desc": desc}
            fixed += 1
        (dest / path.name).write_bytes(pickle.dumps(obj, protocol=2))
    return fixed


def _run(args: list[str], cwd: Path, tmp: Path) -> str:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    out = (proc.stdout + proc.stderr).rstrip()
    for old, new in ((str(tmp), "<repaired copy>"), (sys.prefix, "<venv>"), (str(REPO), ".")):
        out = out.replace(old, new)
    return f"{out}\n(exit status {proc.returncode})"


def describe(job: Path) -> str:
    """The Markdown note for one job directory."""
    fr = job / "fr"
    lines = [
        f"# What `torchfrtrace` says about `{job.name}`",
        "",
        "Produced by `python -m harness.frtrace` with the `torchfrtrace` of torch "
        f"{_torch_version()} (machine paths shortened; the analyzer does not read this file).",
        "",
        "## 1. The dumps as recorded: `torchfrtrace fr`",
        "",
        "```text",
        _run([*_torchfrtrace(), "fr"], job, job),
        "```",
        "",
    ]
    with tempfile.TemporaryDirectory(prefix="frtrace-") as t:
        tmp = Path(t)
        n = repair_gloo_config(fr, tmp)
        lines += [
            "## 2. gloo's empty pg_config key repaired "
            f"({n} dumps): `torchfrtrace --allow-incomplete-ranks <repaired copy>`",
            "",
            "```text",
            _run([*_torchfrtrace(), "--allow-incomplete-ranks", str(tmp)], job, tmp),
            "```",
            "",
        ]
    return "\n".join(lines)


def _torch_version() -> str:
    try:
        import torch

        return str(torch.__version__)
    except ImportError:
        return "?"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.frtrace", description=__doc__)
    parser.add_argument("jobs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for job in args.jobs:
        if not (job / "fr").is_dir():
            print(f"{job}: no fr/ directory", file=sys.stderr)
            continue
        (job / "TORCHFRTRACE.md").write_text(describe(job))
        print(f"{job}/TORCHFRTRACE.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
