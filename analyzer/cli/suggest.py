"""``mcore-diagnose patterns suggest``: draft a catalog pattern from an unknown failure.

For each job, the unknown failure is the template of the verdict's inferred line (or the best
ranked candidate, see :mod:`analyzer.decide.unknown`). Jobs whose templates share a fingerprint give
one draft: ``id = "user.<slug>"``, role ``root``, category ``unknown`` (for the user to set),
the longest literal part of the template as needle, a regex with one named capture per masked
part, the real lines as ``examples`` with the fields they capture, and healthy lines (the good
run's error lines, the job's other error lines and progress lines) as ``counter_examples``.
Every draft is loaded and checked like any user pattern before it is written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import regex

from analyzer.catalog.load import check_pattern, load_catalog
from analyzer.catalog.model import Catalog, CatalogError, Pattern
from analyzer.decide.unknown import (
    Template,
    group,
    hosts_of,
    rank_templates,
    split_candidates,
)
from analyzer.lines.prefixes import split_prefixes
from analyzer.model.event import STRUCTURAL, Role

_TOKEN = regex.compile(r"<(ts|uuid|url|path|addr|hex|host|n)>")
_GROUP = {
    "ts": r".+?",
    "uuid": r"[0-9A-Fa-f-]{36}",
    "url": r"\S+?",
    "path": r"\S+?",
    "addr": r"\S+?",
    "hex": r"(?:0[xX])?[0-9A-Fa-f]+",
    "host": r"[\w.-]+?",
    "n": r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?",
}
_LAST = {"ts": r".+", "url": r"\S+", "path": r"\S+", "addr": r"\S+", "host": r"[\w.-]+"}
"""A lazy group at the very end would capture one character: these are greedy there."""
_NAME = {"ts": "time", "n": "value"}
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "at",
        "by",
        "for",
        "from",
        "in",
        "is",
        "of",
        "on",
        "or",
        "the",
        "to",
        "with",
        "was",
        "were",
        "into",
        "than",
        "got",
        "vs",
    ]
)
_RESERVED = frozenset(STRUCTURAL) | frozenset(
    [
        "task",
        "exitcode",
        "op",
        "seq",
        "timeout_ms",
        "last_enqueued",
        "exc_type",
        "exc_msg",
        "frame",
        "attempts_left",
        "max_restarts",
        "signal",
    ]
)
"""Fields the event table or the rules use: a draft's captures never take these names."""
_GENERIC_NEEDLES = frozenset({"error", "Error", "ERROR", "failed", "timeout", "WARN", "FATAL"})
MAX_EXAMPLES = 5
MAX_COUNTER = 6


class SuggestError(Exception):
    """No draft can be made; the message says why and what to try."""


@dataclass
class Found:
    """One job's unknown failure."""

    job: str
    template: Template
    hosts: set[str]
    others: list[str] = field(default_factory=list)
    """Healthy or unrelated lines of the same job (counter-example material)."""


@dataclass
class Draft:
    """One drafted pattern and the TOML text that holds it."""

    pattern_id: str
    file_name: str
    toml: str
    jobs: list[str]
    fingerprint: str
    template: str


def find_unknown(
    job: Path, catalog: Catalog, baseline: frozenset[str] | None
) -> Found | None:
    """The unknown failure of one job (None when it has no unknown error line)."""
    from analyzer.api import analyze

    a = analyze(job, catalog=catalog, workers=1, good_run_templates=baseline)
    v = a.diagnosis.verdict
    rows = a.rows
    keep, cands = split_candidates(rows)
    hosts = hosts_of(rows)
    templates = group(cands, hosts, baseline or frozenset())
    chosen: Template | None = None
    if v.unknown:
        chosen = next((t for t in templates if t.fingerprint == v.unknown["fingerprint"]), None)
    if chosen is None:
        ws = a.facts.get("world_size")
        ranked = rank_templates(templates, keep, ws if isinstance(ws, int) else None)
        if not ranked and a.diagnosis.status == "failed":
            # asked for explicitly: a line without a rank (logs with no rank prefixes) will do
            ranked = sorted(
                (t for t in templates if not t.in_baseline),
                key=lambda t: (len(t.ranks), t.first.time or datetime.max),
            )
        chosen = ranked[0] if ranked else None
    if chosen is None:
        return None
    others = [r.text for t in templates if t is not chosen for r in t.rows[:1]]
    seen_ids: set[str] = set()
    for r in keep:
        if r.role == Role.CONTEXT and r.pattern_id not in seen_ids:
            seen_ids.add(r.pattern_id)
            others.append(r.text)
    return Found(str(job), chosen, hosts, others)


def _name(kind: str, before: str, used: set[str]) -> str:
    words = regex.findall(r"[A-Za-z_][A-Za-z0-9_]*", before)
    base = words[-1].lower() if words and before.rstrip()[-1:].isalnum() else ""
    if not base or base in _STOP or len(base) < 2:
        base = _NAME.get(kind, kind)
    base = regex.sub(r"\W", "_", base)
    if base in _RESERVED:
        base += "_value"
    name, i = base, 2
    while name in used:
        name, i = f"{base}{i}", i + 1
    used.add(name)
    return name


def _literal(text: str) -> str:
    parts = regex.split(r"(\s+)", text)
    return "".join(r"\s+" if p.isspace() else regex.escape(p, literal_spaces=True) for p in parts)


def build(template: str) -> tuple[str, str, list[str]]:
    """(regex, cause template, literal parts) for a masked template."""
    pieces = _TOKEN.split(template)
    rx: list[str] = []
    cause: list[str] = []
    literals: list[str] = []
    used: set[str] = set()
    for i, piece in enumerate(pieces):
        if i % 2 == 0:
            rx.append(_literal(piece))
            cause.append(piece.replace("{", "{{").replace("}", "}}"))
            literals.append(piece)
            continue
        name = _name(piece, pieces[i - 1], used)
        last = i == len(pieces) - 2 and not pieces[-1].strip()
        body = _LAST.get(piece, _GROUP[piece]) if last else _GROUP[piece]
        rx.append(f"(?P<{name}>{body})")
        cause.append("{" + name + "}")
    return "".join(rx), "".join(cause), literals


def _needle(literals: list[str], lines: list[str]) -> str:
    options = sorted(
        {s for lit in literals for s in (" ".join(lit.split()), *lit.split()) if s},
        key=len,
        reverse=True,
    )
    for n in options:
        if len(n) >= 4 and n not in _GENERIC_NEEDLES and all(n in ln for ln in lines):
            return n
    raise SuggestError(
        "no literal part of the line is long and specific enough to be a needle; write the "
        "pattern by hand (see docs/catalog.md)"
    )


def _slug(literals: list[str]) -> str:
    words = [w.lower() for w in regex.findall(r"[A-Za-z]{2,}", " ".join(literals))]
    return "_".join(words[:5]) or "unknown_failure"


def _s(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text, ensure_ascii=False)


def _rx(text: str) -> str:
    if "'''" in text or text.endswith("'"):
        return _s(text)
    return f"'''{text}'''"


def _examples(rx: regex.Pattern[str], found: Sequence[Found]) -> list[tuple[str, dict[str, str]]]:
    """Up to MAX_EXAMPLES real lines (each job's first, then the rest) the regex matches, with
    the fields it captures."""
    rows = [r for f in found for r in f.template.rows]
    firsts = [f.template.first for f in found]
    chosen = list(dict.fromkeys([r.text for r in firsts] + [r.text for r in rows]))
    examples = []
    for text in chosen[:MAX_EXAMPLES]:
        m = rx.search(split_prefixes(text).message)
        if m is None:
            continue
        examples.append((text, {k: v for k, v in m.groupdict().items() if v is not None}))
    if not examples:
        raise SuggestError(
            "the drafted regex does not match the line it came from; write the pattern by hand"
        )
    return examples


def _counters(rx: regex.Pattern[str], lines: Iterable[str]) -> list[str]:
    """Up to MAX_COUNTER distinct lines the regex does not match."""
    counters: list[str] = []
    for line in lines:
        if line in counters or rx.search(split_prefixes(line).message):
            continue
        counters.append(line)
        if len(counters) >= MAX_COUNTER:
            break
    return counters


def _title(template: str) -> str:
    """The template on one line, cut at a word to about 80 characters."""
    title = " ".join(template.split())
    if len(title) > 80:
        title = title[:80].rsplit(" ", 1)[0] + " …"
    return title


@dataclass
class _Parts:
    """What goes into a drafted pattern's TOML."""

    pid: str
    jobs: list[str]
    template: Template
    needle: str
    rx_text: str
    cause_tpl: str
    examples: list[tuple[str, dict[str, str]]]
    counters: list[str]


def _toml(p: _Parts) -> str:
    """The pattern file: a header comment, then one ``[[pattern]]`` table."""
    t = p.template
    lines = [
        f"# Drafted by `mcore-diagnose patterns suggest` from {len(p.jobs)} job(s): "
        + ", ".join(p.jobs),
        f"# template {t.fingerprint}: {' '.join(t.template.split())}",
        "# Set the category (see `mcore-diagnose patterns list`), the cause and the fix, then",
        "# check it with `mcore-diagnose patterns test --patterns DIR`.",
        "",
        "[[pattern]]",
        f"id = {_s(p.pid)}",
        'category = "unknown"',
        'role = "root"',
        f"title = {_s(_title(t.template))}",
        f"needles = [{_s(p.needle)}]",
        f"regex = {_rx(p.rx_text)}",
        f"cause = {_s('Rank {rank} printed: ' + ' '.join(p.cause_tpl.split()))}",
        f"fix = {_s('Drafted from an unknown failure: say what to do when this line appears.')}",
        'versions = ["drafted from logs"]',
        f"source = {_s('mcore-diagnose patterns suggest, from ' + ', '.join(p.jobs))}",
        "examples = [",
    ]
    for text, fields in p.examples:
        fl = ", ".join(f"{k} = {_s(v)}" for k, v in fields.items())
        lines.append(f"  {{ line = {_s(text)}, fields = {{ {fl} }} }},")
    lines += ["]", "counter_examples = ["]
    lines += [f"  {_s(c)}," for c in p.counters]
    lines.append("]")
    return "\n".join(lines) + "\n"


def draft(found: Sequence[Found], baseline_lines: Sequence[str] = ()) -> Draft:
    """One pattern for jobs that share a template."""
    t = found[0].template
    rx_text, cause_tpl, literals = build(t.template)
    rx = regex.compile(rx_text)
    examples = _examples(rx, found)
    needle = _needle(literals, [e[0] for e in examples])
    counters = _counters(rx, [*baseline_lines, *(o for f in found for o in f.others)])
    slug = _slug(literals)
    pid = f"user.{slug}"
    jobs = [Path(f.job).name for f in found]
    parts = _Parts(pid, jobs, t, needle, rx_text, cause_tpl, examples, counters)
    return Draft(pid, f"{slug}.toml", _toml(parts), jobs, t.fingerprint, t.template)


def check(d: Draft, where: Path) -> list[str]:
    """Problems of a draft once loaded as a user pattern file (empty when it proves itself)."""
    path = where / d.file_name
    path.write_text(d.toml, encoding="utf-8")
    try:
        cat = load_catalog([path], use_env=False, validate=False)
    except CatalogError as exc:
        return [str(exc)]
    p: Pattern = cat.by_id[d.pattern_id]
    return check_pattern(p)


def suggest(
    jobs: Sequence[Path], baseline: Sequence[Path] = (), catalog: Catalog | None = None
) -> tuple[list[Draft], list[str]]:
    """Drafts for the unknown failures of ``jobs`` (one per template fingerprint), and notes
    on the jobs that gave none."""
    from analyzer.api import baseline_templates

    cat = catalog or load_catalog([])
    base = baseline_templates(list(baseline), cat) if baseline else None
    base_lines: list[str] = []
    if baseline:
        from analyzer.api import analyze

        b = analyze(list(baseline), catalog=cat, workers=1)
        _rows, cands = split_candidates(b.rows)
        base_lines = list(dict.fromkeys(r.text for r in cands))
    by_fp: dict[str, list[Found]] = {}
    notes = []
    for job in jobs:
        f = find_unknown(job, cat, base)
        if f is None:
            notes.append(f"{job}: no error line outside the catalog explains this job")
            continue
        by_fp.setdefault(f.template.fingerprint, []).append(f)
    drafts = [draft(fs, base_lines) for fs in by_fp.values()]
    names: dict[str, int] = {}
    for d in drafts:
        n = names.get(d.file_name, 0)
        names[d.file_name] = n + 1
        if n:
            d.pattern_id += f"_{n + 1}"
            d.file_name = d.file_name.removesuffix(".toml") + f"_{n + 1}.toml"
            d.toml = d.toml.replace(
                f'id = "{d.pattern_id.rsplit("_", 1)[0]}"', f'id = "{d.pattern_id}"', 1
            )
    return drafts, notes
