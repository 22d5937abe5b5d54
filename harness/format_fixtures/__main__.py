"""``python -m harness.format_fixtures --out sample_logs/formats [--only NAME ...]``."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import SCENARIOS, generate
from . import __doc__ as package_doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m harness.format_fixtures",
        description=package_doc.splitlines()[0] if package_doc else None,
    )
    ap.add_argument("--out", type=Path, default=Path("sample_logs/formats"))
    ap.add_argument("--only", nargs="*", choices=sorted(SCENARIOS))
    a = ap.parse_args(argv)
    for name in generate(a.out, a.only):
        print(f"wrote {a.out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
