"""``mcore-diagnose patterns``: list, show, test, explain and suggest patterns."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from analyzer.cli.app import (
    GoodRunOpt,
    PatternsOpt,
    _catalog,
    fail,
    patterns_app,
)
from analyzer.decide.verdict import (
    EXIT_UNKNOWN,
    EXIT_USAGE,
)

if TYPE_CHECKING:
    from analyzer.lines.timestamps import Stamp


@patterns_app.command("list")
def patterns_list(patterns: PatternsOpt = None) -> None:
    """List every pattern: id, category, role, title."""
    from analyzer.cli.app import terminal_width
    from analyzer.report.texttable import cut

    cat = _catalog(patterns)
    width = terminal_width()
    for p in cat.patterns:
        wide = f"{p.id:<48} {p.category:<28} {p.role:<8} {p.title}"
        if width is None or len(wide) <= width:
            typer.echo(wide)
            continue
        # narrower than the table: the id on its line, the rest indented below it
        rest = f"    {p.category}, {p.role}: {p.title}"
        typer.echo(cut(p.id, width))
        typer.echo(cut(rest, width))
    typer.echo(f"{len(cat.patterns)} patterns from {len(cat.sources)} files", err=True)


def _stamp(s: Stamp | None) -> str:
    """A prefix's time as printed in the tool's reports (``-`` when the line has none)."""
    if s is None:
        return "-"
    year = f"{s.year:04d}-" if s.year is not None else ""
    frac = f".{s.micro:06d}" if s.micro else ""
    when = f"{year}{s.month:02d}-{s.day:02d} {s.hour:02d}:{s.minute:02d}:{s.second:02d}{frac}"
    return when if s.year is not None else f"{when} (no year)"


@patterns_app.command("show")
def patterns_show(
    pattern_id: Annotated[str, typer.Argument(metavar="ID", help="A pattern id.")],
    patterns: PatternsOpt = None,
) -> None:
    """Show one pattern in full."""
    cat = _catalog(patterns)
    p = cat.by_id.get(pattern_id)
    if p is None:
        close = [i for i in cat.by_id if pattern_id.split(".")[0] in i][:5]
        fail(
            f"no pattern {pattern_id!r}"
            + (
                f"; did you mean {', '.join(close)}?"
                if close
                else "; see `mcore-diagnose patterns list`"
            ),
            EXIT_USAGE,
        )
        return
    from analyzer.cli.app import terminal_width
    from analyzer.report.texttable import hanging

    width = terminal_width()
    fields = (
        ("id", p.id), ("category", p.category), ("role", p.role), ("title", p.title),
        ("needles", str(list(p.needles))), ("regex", p.regex.pattern), ("cause", p.cause),
        ("fix", p.fix), ("versions", ", ".join(p.versions)), ("source", p.source),
        ("file", str(p.origin)),
    )
    for name, value in fields:
        exact = name in ("regex", "needles")  # cut anywhere, no space lost: joined, exact
        typer.echo(hanging(f"{name + ':':<10}", value, width, exact=exact))
    typer.echo("examples:")
    for ex in p.examples:
        typer.echo(hanging("  + ", ex.line, width))
    for line in p.counter_examples:
        typer.echo(hanging("  - ", line, width))


@patterns_app.command("test")
def patterns_test(patterns: PatternsOpt = None) -> None:
    """Run every example and counter-example; exit 1 on any failure."""
    from analyzer.catalog.load import check_pattern, cross_claims

    cat = _catalog(patterns, validate=False)
    failures = [f"{p.id}: {m}" for p in cat.patterns for m in check_pattern(p)]
    failures += cross_claims(cat)
    n = sum(len(p.examples) + len(p.counter_examples) for p in cat.patterns)
    for f in failures:
        typer.echo(f"FAIL {f}")
    typer.echo(f"{len(cat.patterns)} patterns, {n} examples: {len(failures)} failed")
    raise typer.Exit(1 if failures else 0)


@patterns_app.command("explain")
def patterns_explain(
    line: Annotated[str, typer.Argument(metavar="LINE", help="A log line, quoted.")],
    patterns: PatternsOpt = None,
) -> None:
    """Show which pattern matches LINE and what it captures."""
    from analyzer.lines.prefixes import split_prefixes
    from analyzer.util.sanitize import clean_line

    cat = _catalog(patterns)
    pre = split_prefixes(clean_line(line))
    typer.echo(
        f"prefixes: task={pre.task} local_rank={pre.local_rank} rank={pre.rank} "
        f"level={pre.level} time={_stamp(pre.stamp)}"
    )
    typer.echo(f"message:  {pre.message}")
    found = cat.match_all(pre.message)
    if not found:
        typer.echo("no pattern matches")
        raise typer.Exit(1)
    kept = cat.match(pre.message)
    for pm in found:
        mark = "*" if kept and pm.pattern.id == kept.pattern.id else " "
        typer.echo(f"{mark} {pm.pattern.id} ({pm.pattern.category}, {pm.pattern.role})")
        for k, v in pm.fields.items():
            typer.echo(f"    {k} = {v}")


@patterns_app.command("suggest")
def patterns_suggest(
    jobs: Annotated[list[Path], typer.Argument(help="Job directories with an unknown failure.")],
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", metavar="DIR", help="Directory to write the drafted pattern files."
        ),
    ],
    baseline: GoodRunOpt = None,
    patterns: PatternsOpt = None,
) -> None:
    """Draft a pattern (TOML) from the unknown failure of one or more jobs.

    Jobs whose unknown lines share a template give one draft. Each draft passes `patterns
    test` as written; set its category, cause and fix, then use it with --patterns DIR.

    Example:

    \b
      mcore-diagnose patterns suggest logs/job-1234/ logs/job-1250/ -o mine/
    """
    from analyzer.cli.suggest import SuggestError, check, suggest

    for j in [*jobs, *(baseline or [])]:
        if not j.exists():
            fail(f"{j}: no such file or directory", EXIT_USAGE)
    out = output.resolve()
    for j in jobs:
        jr = j.resolve()
        if jr.is_dir() and (out == jr or jr in out.parents):
            fail(f"-o {output} is inside the job directory {j}; write elsewhere", EXIT_USAGE)
    cat = _catalog(patterns)
    try:
        drafts, notes = suggest(jobs, baseline or [], cat)
    except SuggestError as exc:
        fail(str(exc), EXIT_UNKNOWN)
        return
    for n in notes:
        typer.echo(f"mcore-diagnose: {n}", err=True)
    if not drafts:
        fail("nothing to draft: no job has an error line that no pattern knows", EXIT_UNKNOWN)
    with tempfile.TemporaryDirectory(prefix="mcore-suggest-") as tmp:
        for d in drafts:
            problems = check(d, Path(tmp))
            if problems:
                fail(f"the draft {d.pattern_id} does not prove itself: {problems[0]}", 1)
    try:
        output.mkdir(parents=True, exist_ok=True)
        for d in drafts:
            (output / d.file_name).write_text(d.toml, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}", EXIT_USAGE)
    for d in drafts:
        typer.echo(
            f"{output / d.file_name}: {d.pattern_id} from {len(d.jobs)} job(s) "
            f"({', '.join(d.jobs)}), template {d.fingerprint}"
        )
    typer.echo(
        f"next: set category, cause and fix; `mcore-diagnose patterns test --patterns {output}`; "
        f"then `mcore-diagnose JOB --patterns {output}`",
        err=True,
    )
