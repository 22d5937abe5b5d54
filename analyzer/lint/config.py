"""The user's lint settings: partition → GPU model map and node-local path prefixes.

A TOML file, given with ``--config`` or found at ``$MCORE_DIAGNOSE_CONFIG``, else
``$XDG_CONFIG_HOME/mcore-diagnose/config.toml`` (``~/.config/mcore-diagnose/config.toml``)::

    [lint]
    node_local_paths = ["/scratch/local"]   # added to the built-in list
    shared_paths = ["/local/projects"]      # prefixes that look node-local but are shared

    [lint.partitions]
    gpu = "H100"
    gb200 = "GB200"
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

NODE_LOCAL = (
    "/tmp", "/dev/shm", "/var/tmp", "/run/user", "/local", "/localscratch", "/lscratch",
    "/scratch/local", "/raid", "/nvme", "/mnt/local", "/mnt/nvme", "$TMPDIR", "$SLURM_TMPDIR",
    "$LOCAL_SCRATCH", "$LOCALSCRATCH",
)
"""Path prefixes that are on each node's own disk unless the config says otherwise."""


class ConfigError(Exception):
    """The config file is unreadable or malformed."""


@dataclass(frozen=True)
class LintConfig:
    """Settings for the lint rules."""

    partitions: dict[str, str] = field(default_factory=dict)
    node_local: tuple[str, ...] = NODE_LOCAL
    shared: tuple[str, ...] = ()
    source: str | None = None
    gpu_hint: str | None = None
    """A GPU model known from elsewhere (the job's logs), used when the script names none."""
    log_checks: bool = False
    """Also the findings only a job's logs can settle (``uv run`` under srun that syncs: a
    script cannot show whether ``uv sync`` ran before submission). ``mcore-diagnose lint`` has
    no logs and leaves them out; the post-mortem asks for them as its evidence."""


def default_config_path() -> Path:
    """Where the config is looked for when ``--config`` is not given."""
    env = os.environ.get("MCORE_DIAGNOSE_CONFIG")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mcore-diagnose" / "config.toml"


def _strings(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{what} must be a list of strings")
    return tuple(value)


def load_config(path: Path | None = None) -> LintConfig:
    """Read the config at ``path`` (must exist) or the default one (may be absent)."""
    explicit = path is not None
    path = path or default_config_path()
    if not path.is_file():
        if explicit:
            raise ConfigError(f"{path}: no such config file")
        return LintConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    lint = data.get("lint", {})
    if not isinstance(lint, dict):
        raise ConfigError(f"{path}: [lint] must be a table")
    parts = lint.get("partitions", {})
    if not isinstance(parts, dict) or not all(isinstance(v, str) for v in parts.values()):
        raise ConfigError(f"{path}: [lint.partitions] must map partition names to GPU models")
    extra = _strings(lint.get("node_local_paths", []), f"{path}: lint.node_local_paths")
    shared = _strings(lint.get("shared_paths", []), f"{path}: lint.shared_paths")
    return LintConfig(
        partitions={str(k): v for k, v in parts.items()},
        node_local=NODE_LOCAL + extra,
        shared=shared,
        source=str(path),
    )
