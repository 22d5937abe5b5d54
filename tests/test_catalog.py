"""The built-in pattern catalog (``patterns/*.toml``) and the loader's guarantees."""

from __future__ import annotations

import time
import tomllib
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

import pytest
import regex

from analyzer.catalog.load import builtin_dir, check_pattern, cross_claims, load_catalog
from analyzer.catalog.model import USER_TIMEOUT_S, Catalog, CatalogError, Pattern
from analyzer.catalog.vocabulary import CATEGORIES, ROLES
from analyzer.lines.prefixes import split_prefixes
from analyzer.util.sanitize import MAX_LINE_CHARS
from tests.helpers import SAMPLE_LOGS, builtin_catalog

FAMILIES = (
    "nccl",
    "cuda",
    "memory",
    "rendezvous",
    "slurm",
    "megatron",
    "python",
    "hardware",
    "network",
    "storage",
    "torchelastic",
    "ray",
    "mpi",
    "training",
)


def test_every_example_and_counter_example_passes():
    """Validate without raising so that every failure is printed, not just the first."""
    cat = load_catalog(use_env=False, validate=False)
    problems = [f"{p.origin}: {p.id}: {msg}" for p in cat.patterns for msg in check_pattern(p)]
    assert not problems, "pattern self-checks failed:\n  " + "\n  ".join(problems)
    load_catalog(use_env=False)  # and the validating loader agrees


@pytest.mark.parametrize("family", FAMILIES)
def test_family_file_exists_and_is_not_empty(catalog, family):
    path = builtin_dir() / f"{family}.toml"
    assert path.is_file(), f"missing {path.name}"
    assert any(p.origin == path.name for p in catalog.patterns), f"{path.name} has no patterns"


def test_catalog_size(catalog):
    assert len(catalog.patterns) >= 100


def test_every_category_has_a_root_pattern(catalog):
    roots = {p.category for p in catalog.patterns if p.role == "root"}
    missing = [c for c in CATEGORIES if c not in ("unknown", "none") and c not in roots]
    assert not missing, f"categories without a root pattern: {missing}"


def test_no_cross_claims(catalog):
    claims = cross_claims(catalog)
    assert not claims, "examples claimed by another category in the same role:\n  " + "\n  ".join(
        claims
    )


def test_ids_unique_and_dotted(catalog):
    ids = [p.id for p in catalog.patterns]
    assert len(ids) == len(set(ids))
    bad = [i for i in ids if i.count(".") < 1 or not all(part for part in i.split("."))]
    assert not bad, f"ids must be dotted: {bad}"
    for p in catalog.patterns:
        family = p.origin.removesuffix(".toml")
        assert p.id.split(".")[0] == family, f"{p.id} lives in {p.origin}"


def test_fields_are_well_formed(catalog):
    for p in catalog.patterns:
        assert p.role in ROLES
        assert p.category in CATEGORIES and p.category != "none", p.id
        assert p.title and p.cause and p.fix, p.id
        assert p.versions and p.source, p.id
        assert p.examples, p.id
        for n in p.needles:
            assert len(n) >= 4, f"{p.id}: needle {n!r} is too short for the prefilter"
            assert n.strip() not in {"error", "Error", "ERROR", "failed", "timeout", "WARN"}, p.id
            assert n not in ("NCCL INFO", "NCCL WARN"), p.id


def test_examples_keep_one_event_per_line(catalog):
    """The kept event of each root example is a root of the pattern's own category (the
    traceback's pattern, assembled by the reader, is never matched line by line)."""
    for p in catalog.patterns:
        if p.role != "root" or "uncatalogued" in p.tags:
            continue
        for ex in p.examples:
            kept = catalog.match(split_prefixes(ex.line).message)
            assert kept is not None, (p.id, ex.line)
            assert kept.pattern.role == "root", (p.id, ex.line, kept.pattern.id)
            assert kept.pattern.category == p.category, (p.id, ex.line, kept.pattern.id)


HEALTHY_LINES = [
    "  tensor_model_parallel_size ...................... 2",
    "  distributed_timeout_minutes ..................... 10",
    "  check_for_nan_in_loss_and_grad .................. True",
    "using world size: 16, data-parallel size: 2, context-parallel size: 1, "
    "hierarchical context-parallel sizes: None, tensor-model-parallel size: 4, "
    "pipeline-model-parallel size: 2",
    "> initializing torch distributed ...",
    " [2026-08-20 14:03:11.123456] iteration     1200/  500000 | consumed samples:      1228800 "
    "| elapsed time per iteration (ms): 8123.5 | learning rate: 2.999400E-04 | global batch size:"
    "  1024 | lm loss: 2.345679E+00 | loss scale: 1.0 | grad norm: 0.812 | number of skipped "
    "iterations:   0 | number of nan iterations:   0 |",
    "node001:1234:1234 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB ; "
    "OOB ib0:10.0.0.1<0>",
    "node001:1234:1234 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
    "node001:1234:1234 [0] NCCL INFO Channel 00/0 : 3[0] -> 11[0] [send] via NET/IB/0",
    "W0731 10:40:00.000000 3247964 torch/distributed/run.py:793] Setting OMP_NUM_THREADS "
    "environment variable for each process to be 1 in default",
    "[W socket.cpp:663] [c10d] The client socket has failed to connect to [node001]:29500 "
    "(errno: 111 - Connection refused).",
    "UserWarning: When using sequence parallelism it is recommended to set the environment "
    "variable CUDA_DEVICE_MAX_CONNECTIONS to 1 for maximum speedup",
    "saving checkpoint at iteration    1000 to /lustre/ckpt/gpt in torch_dist format",
    "  successfully saved checkpoint from iteration    1000 to /lustre/ckpt/gpt [ t 1/4, p 1/2 ]",
    "[after training is done] datetime: 2026-08-20 15:00:00 ",
]


@pytest.mark.parametrize("line", HEALTHY_LINES)
def test_healthy_lines_are_context_at_most(catalog, line):
    kept = catalog.match(split_prefixes(line).message)
    assert kept is None or kept.pattern.role == "context", kept and kept.pattern.id


def _successful_sample_logs() -> list[Path]:
    root = SAMPLE_LOGS
    out: list[Path] = []
    for d in (root / "real").glob("*"):
        expected = d / "expected.toml"
        if (
            d.is_dir()
            and expected.is_file()
            and tomllib.loads(expected.read_text(encoding="utf-8")).get("category") == "none"
        ):
            out.extend(
                f for f in d.rglob("*") if f.is_file() and f.suffix not in (".toml", ".md", ".json")
            )
    return out


def test_nothing_but_context_fires_on_successful_runs(catalog):
    files = _successful_sample_logs()
    if not files:
        pytest.skip("no successful sample run in sample_logs/real")
    fired = []
    for f in files:
        for i, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            kept = catalog.match(split_prefixes(line).message)
            if kept and kept.pattern.role != "context":
                fired.append(f"{f.name}:{i}: {kept.pattern.id}: {line[:120]}")
    assert not fired, "non-context patterns fired on a successful run:\n  " + "\n  ".join(fired)


# --------------------------------------------------------------------------------------------
# Specific formats the diagnosis depends on
# --------------------------------------------------------------------------------------------

WATCHDOG_LINES = [
    # torch 1.13 / 2.0: no NumelIn, C++ prefix without date
    "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=4, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800867 milliseconds "
    "before timing out.",
    # torch 2.4+: 3-digit date, srun label, tee prefix, rank prefix
    "  1: [default3]:[rank11]:[E808 04:21:41.161005534 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog "
    "caught collective operation timeout: WorkNCCL(SeqNum=57, OpType=ALLGATHER, NumelIn=1, "
    "NumelOut=4, Timeout(ms)=600000) ran for 600038 milliseconds before timing out.",
]


@pytest.mark.parametrize("line", WATCHDOG_LINES)
def test_watchdog_timeout_is_a_collective_timeout_symptom(catalog, line):
    kept = catalog.match(split_prefixes(line).message)
    assert kept is not None
    assert kept.pattern.id == "nccl.watchdog.timeout"
    assert kept.pattern.role == "symptom"
    assert kept.pattern.category == "collective_timeout"
    assert {"seq", "op", "timeout_ms", "elapsed_ms"} <= kept.fields.keys()


@pytest.mark.parametrize(
    ("line", "pg_id", "pg_desc", "pg_rank"),
    [
        (
            "[rank25]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 25] Timeout at NCCL work: 5, last "
            "enqueued NCCL work: 5, last completed NCCL work: 4.",
            "0",
            None,
            "25",
        ),
        (
            "[rank368]:[E808 04:21:41.161005534 ProcessGroupNCCL.cpp:2299] [PG ID 0 PG GUID "
            "0(default_pg) Rank 368]  failure detected by watchdog at work sequence id: 5 PG "
            "status: last enqueued work: 5, last completed work: 4",
            "0",
            "default_pg",
            "368",
        ),
    ],
)
def test_pg_prefix_variants(catalog, line, pg_id, pg_desc, pg_rank):
    kept = catalog.match(split_prefixes(line).message)
    assert kept is not None
    assert kept.fields.get("pg_id") == pg_id
    assert kept.fields.get("pg_desc") == pg_desc
    assert kept.fields.get("pg_rank") == pg_rank
    assert kept.fields["last_enqueued"] == "5" and kept.fields["last_completed"] == "4"


@pytest.mark.parametrize(
    ("line", "pattern_id"),
    [
        (
            "failed (exitcode: -9) local_rank: 3 (pid: 15628) of binary: /usr/bin/python",
            "torchelastic.exit.sigkill",
        ),
        (
            "failed (exitcode: -11) local_rank: 3 (pid: 15628) of binary: /usr/bin/python",
            "torchelastic.exit.sigsegv",
        ),
        (
            "failed (exitcode: -7) local_rank: 3 (pid: 15628) of binary: /usr/bin/python",
            "torchelastic.exit.sigbus",
        ),
        (
            "failed (exitcode: 16) local_rank: 3 (pid: 15628) of binary: /usr/bin/python",
            "torchelastic.exit.megatron_rerun",
        ),
        (
            "failed (exitcode: 1) local_rank: 3 (pid: 15628) of binary: /usr/bin/python",
            "torchelastic.exit.failed",
        ),
    ],
)
def test_torchrun_exit_codes(catalog, line, pattern_id):
    kept = catalog.match(line)
    assert kept is not None and kept.pattern.id == pattern_id
    assert kept.pattern.role == "symptom"


def test_bare_max_connections_assert_source_line(catalog):
    line = "[rank0]:     assert os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS') == \"1\""
    kept = catalog.match(split_prefixes(line).message)
    assert kept is not None
    assert kept.pattern.category == "cuda_device_max_connections"
    assert kept.pattern.role == "root"


# --------------------------------------------------------------------------------------------
# User pattern directories
# --------------------------------------------------------------------------------------------

USER_OVERRIDE = """
[[pattern]]
id = "nccl.watchdog.timeout"
category = "collective_timeout"
role = "symptom"
title = "site override"
needles = ["Watchdog caught collective operation timeout"]
regex = '''Watchdog caught collective operation timeout'''
cause = "overridden"
fix = "call the on-call"
versions = ["torch 2.5"]
source = "site"
examples = ["[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)"]
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    d = tmp_path / "user_patterns"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text, encoding="utf-8")
    return d


def test_user_directory_overrides_builtin_id(tmp_path, catalog):
    d = _write(tmp_path, "site.toml", USER_OVERRIDE)
    builtin = catalog
    cat = load_catalog([d], use_env=False)
    p = cat.by_id["nccl.watchdog.timeout"]
    assert p.title == "site override"
    assert p.user
    assert len(cat.patterns) == len(builtin.patterns)


def test_user_directory_from_environment(tmp_path, monkeypatch):
    d = _write(tmp_path, "site.toml", USER_OVERRIDE)
    monkeypatch.setenv("MCORE_DIAGNOSE_PATTERNS", str(d))
    assert load_catalog().by_id["nccl.watchdog.timeout"].title == "site override"


BROKEN_TEMPLATE = """
[[pattern]]
id = "site.{pid}"
category = "python_exception"
role = "root"
title = "broken"
needles = [{needle!r}]
regex = '''{regex}'''
cause = "x"
fix = "y"
versions = ["torch 2.5"]
source = "site"
examples = [{example!r}]
"""


@pytest.mark.parametrize(
    ("pid", "needle", "regex", "example", "reason"),
    [
        ("bad_regex", "boom", "boom(", "boom", "does not compile"),
        ("failing_example", "boom", "kaboom", "boom happened", "does not match example"),
        ("needle_missing", "zzz-not-there", "boom", "boom happened", "no needle occurs"),
    ],
)
def test_broken_user_pattern_is_rejected_with_file_and_id(
    tmp_path, pid, needle, regex, example, reason
):
    text = BROKEN_TEMPLATE.format(pid=pid, needle=needle, regex=regex, example=example)
    d = _write(tmp_path, "broken.toml", text)
    with pytest.raises(CatalogError) as err:
        load_catalog([d], use_env=False)
    msg = str(err.value)
    assert "broken.toml" in msg
    assert f"site.{pid}" in msg
    assert reason in msg


CATASTROPHIC = """
[[pattern]]
id = "site.catastrophic"
category = "python_exception"
role = "root"
title = "catastrophic backtracking"
needles = ["a"]
regex = '''(a+)+$'''
cause = "x"
fix = "y"
versions = ["any"]
source = "site"
examples = ["aaaa"]
"""


def test_catastrophic_user_regex_is_disabled_not_hung(tmp_path, monkeypatch):
    """The search runs once, under ``USER_TIMEOUT_S`` (without a limit, ``(a+)+$`` on this
    line would never end: the spy refuses that search rather than hang), runs out of time and
    switches the pattern off; a switched-off pattern's regex never runs again."""
    d = _write(tmp_path, "slow.toml", CATASTROPHIC)
    cat = load_catalog([d], use_env=False)
    p = cat.by_id["site.catastrophic"]
    limits: list[float | None] = []

    class Spy:
        def __init__(self, real: regex.Pattern[str]) -> None:
            self.real = real

        def search(self, line: str, timeout: float | None = None) -> object:
            limits.append(timeout)
            assert timeout is not None, "a user pattern searched without a time limit"
            return self.real.search(line, timeout=timeout)

    monkeypatch.setattr(p, "regex", Spy(p.regex))
    evil = "a" * 5000 + "b"
    assert p.search(evil) is None
    assert limits == [USER_TIMEOUT_S]
    assert p.disabled_reason
    # once disabled it stays off and costs nothing
    assert all(pm.pattern.id != p.id for pm in cat.match_all(evil))
    assert p.search("aaaa") is None
    assert limits == [USER_TIMEOUT_S]


def _adversarial(example: str, needles: tuple[str, ...], n: int = MAX_LINE_CHARS) -> list[str]:
    """Lines of ``n`` characters that make a backtracking regex slow: the example again and
    again, its first half again and again (a match that almost succeeds everywhere), a needle
    before the example's tail repeated, and a needle beside a run of one character of the
    example (``\\S+``, ``.*?`` and ``[^:]+`` scanning to the end from every position). The
    lines for two sizes are the same text cut at different lengths, in the same order."""
    msg = split_prefixes(example).message or example
    half = msg[: max(1, len(msg) // 2)]
    out = [(msg * (n // len(msg) + 1))[:n], (half * (n // len(half) + 1))[:n]]
    tail = msg[len(msg) // 2 :] or msg
    for nd in needles:
        out.append((nd + tail * (n // len(tail) + 1))[:n])
    nd = needles[0]
    for c in sorted(set(msg)):
        out += [(nd + " " + c * n)[:n], c * (n - len(nd)) + nd]
    return out


# Work is measured as this thread's CPU time (other processes on a busy machine do not count)
# and only ever compared with other work measured in the same run: no test here depends on
# how fast the machine is.
_FULL = MAX_LINE_CHARS
"""The longest line the reader hands a pattern: the measurement in full (marked ``slow``)."""
_QUICK = MAX_LINE_CHARS // 4
"""The fast loop's line: a quadratic search costs 16 times less than on ``_FULL``, and the
check still catches what it is for: a cubic search still grows 512 times on a line 8 times
longer, a catastrophic one still runs out of ``_HANG_S``."""
_GROWTH_LIMIT = 3 * 8**2
"""Lines 8 times longer may cost at most this many times more: 64 for a quadratic search (a
``\\S+:`` retried from every position; bounded, as the reader cuts lines at
``MAX_LINE_CHARS``), 3 for slack; a cubic search costs 512 times more, a catastrophic one
(nested quantifiers) runs out of ``_HANG_S``."""
_REFERENCE = regex.compile(r"a+b")
"""The yardstick: on ``"a" * n`` it retries ``a+`` from every position, n²/2 steps."""
_WORK_LIMIT = 5
"""A search may cost at most this many yardsticks on a line of the same length (the slowest
built-in costs about 1.2 at ``_FULL``; 5 is where the old limit of 0.25 s stood)."""
_MEASURE_FROM = 1 / 16
"""Growth is measured only for searches costing this much of a yardstick or more: below it a
search is cheap at the longest line there is, whatever its growth (and too quick to time)."""
_HANG_S = 10.0
"""A search still running after this long is catastrophic (the slowest built-in needs a
hundredth of it): a guard against hanging the suite, not a measure of speed."""


def _cpu(search: Callable[[str], object], line: str, tries: int = 1) -> float:
    """The least CPU time of ``tries`` runs of ``search(line)``."""
    best = float("inf")
    for _ in range(tries):
        start = time.thread_time()
        search(line)
        best = min(best, time.thread_time() - start)
    return best


def _yardstick(n: int) -> float:
    """CPU time of the yardstick on a line of ``n`` characters; checks that it is quadratic
    (a cleverer regex engine could make it linear, and every other figure would be off)."""
    big = _cpu(_REFERENCE.search, "a" * n, 3)
    small = _cpu(_REFERENCE.search, "a" * (n // 8), 3)
    assert big > 20 * small, (
        f"the yardstick {_REFERENCE.pattern!r} is no longer quadratic in this regex engine "
        f"({small:.2e} s -> {big:.2e} s): choose another one"
    )
    return big


@pytest.fixture(scope="module")
def yardstick() -> Callable[[int], float]:
    """``yardstick(n)``: the yardstick's CPU time on a line of ``n`` characters, measured
    once per size and test process."""
    return cache(_yardstick)


def _backtracking(
    patterns: Iterable[Pattern], n: int, yardstick: float, hang_s: float = _HANG_S
) -> list[tuple[str, str, str]]:
    """``(pattern id, why, line start)`` for each pattern whose search on an adversarial line
    of ``n`` characters grows faster than quadratically with the line's length (against the
    same text cut 8 times shorter), costs more than ``_WORK_LIMIT`` times ``yardstick`` (the
    yardstick's time on a line of ``n``), or is still searching after ``hang_s``."""
    bad = []
    for p in patterns:
        def search(line: str, p: Pattern = p) -> object:
            return p.regex.search(line, timeout=hang_s)

        for ex in p.examples:
            lines = zip(
                _adversarial(ex.line, p.needles, n // 8),
                _adversarial(ex.line, p.needles, n),
                strict=True,
            )
            try:
                for short, line in lines:
                    t = _cpu(search, line)
                    if t < _MEASURE_FROM * yardstick:
                        continue
                    small = max(_cpu(search, short, 3), 1e-9)
                    if t > min(_GROWTH_LIMIT * small, _WORK_LIMIT * yardstick):
                        # over a limit: the least of 3 runs decides (one run passing is enough)
                        t = min(t, _cpu(search, line, 2))
                    growth = t / small
                    if growth > _GROWTH_LIMIT:
                        why = f"{growth:.0f}x the work on an 8x longer line"
                        bad.append((p.id, why, line[:60]))
                    elif t > _WORK_LIMIT * yardstick:
                        bad.append((p.id, f"{t / yardstick:.1f} yardsticks", line[:60]))
            except TimeoutError:
                bad.append((p.id, f"still searching after {hang_s:g} s", line[:60]))
                break
    return bad


_SIZES = [
    pytest.param(_QUICK, id="quick"),
    pytest.param(_FULL, id="full", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("n", _SIZES)
@pytest.mark.parametrize("pattern_id", [p.id for p in builtin_catalog().patterns])
def test_builtin_regexes_do_not_backtrack(
    catalog: Catalog, yardstick: Callable[[int], float], pattern_id: str, n: int
) -> None:
    """Built-in patterns search without a time limit (``catalog.USER_TIMEOUT_S``: the limit
    costs most of a search), so each must stay cheap on the worst line the reader hands it:
    ``MAX_LINE_CHARS`` of text built to make ``\\S+:``, ``.*?`` chains and optional groups
    retry from every position. Cheap means no worse than quadratic in the line's length (the
    cost on a line 8 times shorter, same text) and at most a few times the work of a
    textbook quadratic scan of a line as long (``_REFERENCE``), both measured in this run.
    Before this test, two built-in regexes ran past 2 s on such a line (and were switched off
    for the rest of the run), four more took 0.2-0.5 s. One test per pattern and line length:
    ``quick`` (a quarter of ``MAX_LINE_CHARS``) in the fast loop, ``full`` marked slow."""
    slow = _backtracking([catalog.by_id[pattern_id]], n, yardstick(n))
    assert not slow, slow


_CHECKED = """
[[pattern]]
id = "site.checked"
category = "python_exception"
role = "root"
title = "a regex for the backtracking check"
needles = ["a"]
regex = '{regex}'
cause = "x"
fix = "y"
versions = ["any"]
source = "site"
examples = ["aab"]
"""


@pytest.mark.parametrize(
    ("source", "n", "why"),
    [
        pytest.param("a+b", _QUICK, None, id="quadratic-passes"),
        pytest.param("ab+", _QUICK, None, id="linear-passes"),
        # cubic: ~0.1 s at 512 characters, ~6 s at _QUICK; the growth is the same at any length
        pytest.param("a+a+b", 512, "the work on an 8x longer line", id="cubic"),
        pytest.param("(?:a|aa)+b", _QUICK, "still searching after", id="catastrophic"),
    ],
)
def test_the_backtracking_check_catches_worse_than_quadratic(
    tmp_path: Path, yardstick: Callable[[int], float], source: str, n: int, why: str | None
) -> None:
    """The check the fast loop runs flags a cubic regex (by its growth) and a catastrophic one
    (it hangs: given up after 1 s here, as nothing shorter than for ever would do), and passes
    the yardstick itself and a linear regex."""
    d = _write(tmp_path, "checked.toml", _CHECKED.format(regex=source))
    p = load_catalog([d], use_env=False).by_id["site.checked"]
    bad = _backtracking([p], n, yardstick(n), hang_s=1.0)
    if why is None:
        assert bad == []
    else:
        assert bad and all(b[0] == "site.checked" and why in b[1] for b in bad), bad


def test_builtin_patterns_search_without_time_limit(catalog):
    """A built-in pattern searches with no time limit and is never switched off; a user
    pattern searches under ``USER_TIMEOUT_S`` and is switched off when it runs out."""
    import dataclasses

    class Slow:
        """A regex whose every search runs out of any time limit it is given."""

        def __init__(self) -> None:
            self.limits: list[float | None] = []

        def search(self, message: str, timeout: float | None = None) -> str | None:
            self.limits.append(timeout)
            if timeout is not None:
                raise TimeoutError
            return message

    base = catalog.by_id["megatron.ctx.iteration"]
    builtin = dataclasses.replace(base, regex=Slow())
    user = dataclasses.replace(base, regex=Slow(), user=True)
    assert builtin.search("x") == "x" and builtin.search("y") == "y"
    assert builtin.regex.limits == [None, None] and builtin.disabled_reason is None
    assert user.search("x") is None and user.search("y") is None
    assert user.regex.limits == [USER_TIMEOUT_S] and user.disabled_reason


# --------------------------------------------------------------------------------------------
# Catch-alls (tag "fallback"): an exception line never vanishes, a specific pattern always wins
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "pattern_id"),
    [
        # Wordings no specific pattern knows still become an event (real lines):
        ("[rank0]: AttributeError: 'NoneType' object has no attribute 'shape'",
         "python.exception.uncaught"),
        ("safetensors_rust.SafetensorError: Error while serializing: IoError(Os { code: 28, kind: "
         "StorageFull, message: \"No space left on device\" })", "storage.no_space"),
        # torch 1.x bare TCPStore message: the specific rendezvous pattern claims it
        ("RuntimeError: Address already in use", "rendezvous.store.eaddrinuse_bare"),
        # the config catch-all beats the generic exception for a wording Megatron's patterns miss
        ("AssertionError: num_layers_in_first_pipeline_stage must be divisible by virtual "
         "pipeline size", "megatron.config.divisibility_generic"),
        # a launcher's consequence is never the generic exception
        ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
         "torchelastic.childfailed.header"),
    ],
)
def test_exception_lines_are_always_claimed(catalog, line, pattern_id):
    pm = catalog.match(split_prefixes(line).message)
    assert pm is not None and pm.pattern.id == pattern_id


def test_fallback_loses_to_any_specific_pattern_of_any_role(catalog):
    # The DataLoader re-raise is only a symptom, yet the generic root must not claim the line.
    msg = "ValueError: Caught ValueError in DataLoader worker process 1."
    found = {pm.pattern.id for pm in catalog.match_all(msg) if pm.pattern.role != "candidate"}
    assert found == {"python.dataloader.reraise"}
    assert catalog.match(msg).pattern.id == "python.dataloader.reraise"


USER_CLAIM = """
[[pattern]]
id = "site.dataset.bad_shard"
category = "storage"
role = "context"
title = "site: a known bad shard"
needles = ["bad shard"]
regex = '''bad shard (?P<path>\\S+)'''
cause = "known"
fix = "skip it"
versions = ["site"]
source = "site"
examples = ["ValueError: bad shard /data/x.bin"]
"""


def test_user_pattern_claims_an_exception_line_over_the_generic(tmp_path, catalog):
    d = _write(tmp_path, "site.toml", USER_CLAIM)
    cat = load_catalog([d], use_env=False)
    pm = cat.match("ValueError: bad shard /data/x.bin")
    assert pm is not None and pm.pattern.id == "site.dataset.bad_shard"
    assert catalog.match("ValueError: bad shard /data/x.bin").pattern.id == (
        "python.exception.uncaught"
    )


def test_fallback_tag_is_declared_on_the_catch_alls(catalog):
    tagged = {p.id for p in catalog.patterns if "fallback" in p.tags}
    assert "python.exception.uncaught" in tagged


# --- the built-in catalog as an installed package sees it ------------------------------------


def test_builtin_catalog_loads_from_a_namespace_package_path(tmp_path, monkeypatch):
    """A wheel install gives ``analyzer.patterns`` as a namespace package: resources hands back
    a MultiplexedPath, whose str() is no directory. The loader must iterate it, not str() it."""
    from importlib.resources.readers import MultiplexedPath

    import analyzer.catalog.load as catalog_mod

    d = tmp_path / "site" / "analyzer" / "patterns"
    d.mkdir(parents=True)
    src = catalog_mod._CHECKOUT_DIR / "slurm.toml"
    (d / "slurm.toml").write_bytes(src.read_bytes())
    monkeypatch.setattr(catalog_mod.resources, "files", lambda _pkg: MultiplexedPath(d))
    cat = load_catalog(use_env=False)
    assert cat.patterns and {p.origin for p in cat.patterns} == {"slurm.toml"}


def test_empty_builtin_catalog_is_a_hard_error(tmp_path, monkeypatch):
    import analyzer.catalog.load as catalog_mod

    empty = tmp_path / "patterns"
    empty.mkdir()
    monkeypatch.setattr(catalog_mod.resources, "files", lambda _pkg: empty)
    with pytest.raises(CatalogError, match=r"built-in pattern catalog is empty.*reinstall"):
        load_catalog(use_env=False)


def test_unreadable_builtin_catalog_is_a_hard_error(tmp_path, monkeypatch):
    import analyzer.catalog.load as catalog_mod

    d = tmp_path / "patterns"
    d.mkdir()
    (d / "nccl.toml").write_bytes(b"\xff\xfe not utf-8 [[[")
    monkeypatch.setattr(catalog_mod.resources, "files", lambda _pkg: d)
    with pytest.raises(CatalogError, match=r"nccl.toml"):
        load_catalog(use_env=False)


def test_builtin_catalog_without_patterns_is_a_hard_error(tmp_path, monkeypatch):
    import analyzer.catalog.load as catalog_mod

    d = tmp_path / "patterns"
    d.mkdir()
    (d / "nccl.toml").write_text("# nothing here\n")
    monkeypatch.setattr(catalog_mod.resources, "files", lambda _pkg: d)
    with pytest.raises(CatalogError, match="holds no pattern"):
        load_catalog(use_env=False)


def test_pattern_fields_are_groupdict_without_empty_captures(catalog) -> None:
    """``Pattern.fields`` (read through ``groups()``, the reader's hot path) gives what
    ``groupdict()`` gives less the empty captures, in the same order, on every example."""
    checked = 0
    for p in catalog.patterns:
        for line in [e.line for e in p.examples] + list(p.counter_examples):
            m = p.regex.search(line)
            if m:
                want = [(k, v) for k, v in m.groupdict().items() if v]
                assert list(p.fields(m).items()) == want, p.id
                checked += 1
    assert checked > 300


# --- the traceback's pattern (tag "uncatalogued"): in the catalog, assembled by the reader -----


def test_traceback_pattern_is_found_by_tag_and_never_matched_line_by_line(catalog):
    p = catalog.traceback
    assert p.id == "python.traceback" and p.role == "root" and p.category == "python_exception"
    assert [q.id for q in catalog.patterns if "uncatalogued" in q.tags] == [p.id]
    kept = catalog.match(split_prefixes(p.examples[0].line).message)
    assert kept is not None and kept.pattern.id == "python.traceback.start"
    assert all(p.id not in {pm.pattern.id for pm in catalog.match_all(split_prefixes(
        ex.line).message)} for ex in p.examples)


def test_generic_exception_tag_is_declared_on_the_generic_exception_line(catalog):
    tagged = [p.id for p in catalog.patterns if "generic-exception" in p.tags]
    assert tagged == ["python.exception.uncaught"]


TRACEBACK_OVERRIDE = """
[[pattern]]
id = "python.traceback"
category = "python_exception"
role = "root"
title = "site traceback"
needles = ["Traceback (most recent call last):"]
regex = '''^Traceback \\(most recent call last\\):'''
cause = "An uncaught exception."
fix = "-"
versions = ["site"]
source = "site"
examples = ["Traceback (most recent call last):"]
"""


def _dir(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def test_a_user_traceback_pattern_keeps_the_tag_and_stays_alone(tmp_path):
    # Replacing the traceback's pattern without its tag: the reader would have none.
    d = _write(_dir(tmp_path, "a"), "site.toml", TRACEBACK_OVERRIDE)
    with pytest.raises(CatalogError, match="must keep its tag 'uncatalogued'"):
        load_catalog([d], use_env=False)
    # With it, the user's pattern is the one; its cause may use the reader's fields.
    tagged = TRACEBACK_OVERRIDE.replace('role = "root"', 'role = "root"\ntags = ["uncatalogued"]')
    tagged = tagged.replace("An uncaught exception.", "An uncaught {exc_type} at {frame}.")
    d = _write(_dir(tmp_path, "b"), "site.toml", tagged)
    assert load_catalog([d], use_env=False).traceback.title == "site traceback"
    # A second pattern with the tag is refused.
    second = tagged.replace('id = "python.traceback"', 'id = "site.traceback"')
    d = _write(_dir(tmp_path, "c"), "site.toml", second)
    with pytest.raises(CatalogError, match="only one pattern may carry the tag"):
        load_catalog([d], use_env=False)
    # Without the tag the reader's fields are no placeholders.
    other = second.replace('tags = ["uncatalogued"]\n', "")
    d = _write(_dir(tmp_path, "d"), "site.toml", other)
    with pytest.raises(CatalogError, match=r"uses \{exc_type\}"):
        load_catalog([d], use_env=False)
