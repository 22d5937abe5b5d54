"""``mcore-diagnose lint``: check sbatch scripts against the launch guide before submission."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analyzer.lint.config import ConfigError, LintConfig, load_config
    from analyzer.lint.rules import Finding

# The rules load on first use, not with the package: every command imports ``lint.cli`` (to
# register ``lint``) and every diagnosis ``lint_text`` (for a batch script it may not have).
_LAZY = {
    "ConfigError": "analyzer.lint.config",
    "LintConfig": "analyzer.lint.config",
    "load_config": "analyzer.lint.config",
    "Finding": "analyzer.lint.rules",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_ORDER = {"error": 0, "warning": 1, "note": 2}


def lint_text(text: str, path: str = "<script>", cfg: LintConfig | None = None) -> list[Finding]:
    """The findings for one script's text, sorted by line; inline disables applied."""
    from analyzer.lint.config import LintConfig
    from analyzer.lint.launchplan import read_job
    from analyzer.lint.rules import RULES
    from analyzer.lint.script import parse_script

    cfg = cfg or LintConfig()
    script = parse_script(text, path)
    job = read_job(script)
    found: list[Finding] = []
    seen: set[tuple[str, int, str]] = set()
    for rule in RULES:
        for f in rule.check(job, cfg):
            off = script.disabled.get(f.line, set())
            if f.rule in off or "all" in off:
                continue
            key = (f.rule, f.line, f.message)
            if key not in seen:
                seen.add(key)
                found.append(f)
    return sorted(found, key=lambda f: (f.line, _ORDER[f.severity], f.rule))


def lint_file(path: Path, cfg: LintConfig | None = None) -> list[Finding]:
    """Read and lint ``path`` (raises OSError / UnicodeDecodeError when it cannot be read)."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    return lint_text(text, str(path), cfg)


__all__ = ["ConfigError", "Finding", "LintConfig", "lint_file", "lint_text", "load_config"]
