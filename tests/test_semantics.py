"""The catalog's meaning as data: strict pattern schema, tags, capture roles and types, and the
defects that came from meaning living in code (each test failed before its fix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.catalog.load import load_catalog
from analyzer.catalog.model import CatalogError, convert
from analyzer.catalog.vocabulary import CATEGORIES, CATEGORY_TABLE, STRUCTURAL_NAMES
from analyzer.decide.fixes import compose, merge_fix, tailor_fix
from analyzer.model.event import from_flat
from analyzer.shape.events import BASE_COLUMNS
from analyzer.shape.facts import JobFacts
from tests.helpers import write_job

_GOOD = """
[[pattern]]
id = "user.demo"
category = "storage"
role = "root"
title = "Demo"
needles = ["quota gone"]
regex = '''quota gone on (?P<mount>\\S+) after (?P<waited>\\d+ms)'''
cause = "Rank {rank} lost its quota on {mount}."
fix = "Free space on {mount}."
captures = { waited = "duration" }
examples = [{ line = "quota gone on /scratch after 500ms", fields = { mount = "/scratch" } }]
counter_examples = ["quota fine"]
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "user.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_a_well_formed_user_pattern_loads_with_its_declared_types(tmp_path: Path) -> None:
    cat = load_catalog([_write(tmp_path, _GOOD)], use_env=False)
    p = cat.by_id["user.demo"]
    assert p.captures["waited"].type == "duration"
    assert p.captures["mount"].type == "str"
    assert cat.capture_types()["waited"] == "duration"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("counter_examples", "counter_example"), "unknown key 'counter_example'"),
        (("(?P<mount>", "(?P<host>"), "shadows a structural column"),
        (("(?P<mount>", "(?P<job>"), "shadows a structural column"),
        (("Free space on {mount}.", "Free space on {volume}."), "uses {volume}"),
        (('captures = { waited = "duration" }', 'captures = { waited = "weeks" }'), "has type"),
        (('captures = { waited = "duration" }', 'captures = { gone = "int" }'), "regex lacks"),
        (
            ('captures = { waited = "duration" }', 'captures = { waited = { role = "boss" } }'),
            "has role 'boss'",
        ),
        (('title = "Demo"', 'title = "Demo"\ntags = ["dead"]'), "unknown tag 'dead'"),
        (('fields = { mount = "/scratch" }', 'fields = { mnt = "/scratch" }'), "field 'mnt'"),
    ],
)
def test_the_loader_rejects_what_would_silently_change_meaning(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    old, new = change
    assert old in _GOOD
    with pytest.raises(CatalogError) as err:
        load_catalog([_write(tmp_path, _GOOD.replace(old, new))], use_env=False)
    assert message in str(err.value)
    assert "user.demo" in str(err.value)


def test_an_unknown_top_level_key_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="unknown top-level key 'patern'"):
        load_catalog([_write(tmp_path, _GOOD.replace("[[pattern]]", "[[patern]]"))])


def test_user_tags_are_allowed_with_the_user_prefix(tmp_path: Path) -> None:
    text = _GOOD.replace('title = "Demo"', 'title = "Demo"\ntags = ["user-nightly"]')
    cat = load_catalog([_write(tmp_path, text)], use_env=False)
    assert "user-nightly" in cat.by_id["user.demo"].tags


def test_no_shipped_capture_shadows_a_structural_column() -> None:
    cat = load_catalog(use_env=False)
    assert set(BASE_COLUMNS) == STRUCTURAL_NAMES
    for p in cat.patterns:
        assert not set(p.regex.groupindex) & STRUCTURAL_NAMES, p.id


def test_the_shipped_catalog_declares_the_tags_code_acts_on() -> None:
    cat = load_catalog(use_env=False)
    tagged = {t: {p.id for p in cat.patterns if t in p.tags} for t in ("death", "restart")}
    assert "torchelastic.exit.sigkill" in tagged["death"]
    assert "torchelastic.exit.sigterm" not in tagged["death"]
    assert tagged["restart"] == {"torchelastic.restart"}
    exits = [p for p in cat.patterns if "task-exit" in p.tags]
    assert exits and all(p.by_role("task") and p.by_role("host") for p in exits)


def test_category_table_covers_the_contract() -> None:
    assert set(CATEGORY_TABLE) == set(CATEGORIES)


@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [
        ("int", "42", 42),
        ("int", "x", None),
        ("float", "2.5", 2.5),
        ("size", "20.00 GiB", 20 * 1024**3),
        ("size", "512 MB", 512e6),
        ("duration", "600000ms", 600.0),
        ("duration", "1800s", 1800.0),
        ("duration", "2 min", 120.0),
        ("str", "abc", "abc"),
    ],
)
def test_capture_types_convert(kind: str, text: str, value: object) -> None:
    assert convert(kind, text) == value


def test_event_table_types_captures_as_declared() -> None:
    a = analyze("sample_logs/formats/cuda-oom-cascade")
    schema = a.events.schema
    assert str(schema["xid"] if "xid" in schema else schema["gpu"]).startswith("Int")
    assert str(schema["text"]) == "String"


# --- defects -----------------------------------------------------------------------------


def _job(tmp_path: Path, name: str, text: str) -> Path:
    return write_job(tmp_path / "job", {name: text})


def test_rendezvous_names_the_store_host_not_the_printing_node(tmp_path: Path) -> None:
    # Printed on gpu-node-002 (srun task 1), about the store on gpu-node-001.
    job = _job(
        tmp_path,
        "slurm-7.out",
        "1: [E1202 17:20:59.055280989 socket.cpp:1028] [c10d] The client socket has timed out "
        "after 600000ms while trying to connect to (gpu-node-001, 29500).\n"
        "srun: error: gpu-node-002: task 1: Exited with exit code 1\n"
        "srun: error: gpu-node-001: task 0: Exited with exit code 1\n",
    )
    v = analyze(job).diagnosis.verdict
    assert v.category == "rendezvous"
    assert "gpu-node-001:29500" in v.cause
    assert "free on gpu-node-001" in v.fix
    assert "gpu-node-002" not in v.fix


def test_oom_fix_never_says_rank_none() -> None:
    row = {"category": "cuda_oom", "rank": None, "tried": "2.00 GiB", "text": ""}
    fix = tailor_fix(from_flat(row), "Reduce memory.", JobFacts(), _geo())
    assert "None" not in fix and "?" not in fix
    # the cause states the figures; the fix starts with what to change (issue 42, item 17)
    assert "2.00 GiB" not in fix and fix.startswith("Lower --micro-batch-size")


def test_import_error_and_rendezvous_fixes_say_each_thing_once() -> None:
    base = (
        "Launch with the venv's interpreter (`uv run python -m torch.distributed.run ...`, not a "
        "bare `torchrun`), run `uv sync` before submitting, and check PYTHONPATH includes the "
        "Megatron-LM worktree."
    )
    fix = tailor_fix(from_flat({"category": "import_error", "node": "3"}), base, JobFacts(), _geo())
    assert fix.count("torch.distributed.run") == 1
    assert fix.count("uv sync") == 1
    base = "Check MASTER_ADDR is the first host of the allocation, MASTER_PORT matches everywhere."
    row = {"category": "rendezvous", "store_host": "n1", "port": "29500"}
    fix = tailor_fix(from_flat(row), base, JobFacts(), _geo())
    assert fix.count("first host of the allocation") == 1
    assert fix.count("MASTER_PORT") == 1
    assert "port 29500 is free on n1" in fix


def test_compose_and_merge_keep_the_catalog_fix() -> None:
    assert compose("Do A.", ("do a", "Do A again."), ("b", "Do B.")) == "Do A. Do B."
    assert compose("-", ("b", "Do B.")) == "Do B."
    merged = merge_fix("Lower the micro batch size to 2.", "Lower the micro batch size. Call us.")
    assert merged == "Lower the micro batch size to 2. Call us."


def test_max_connections_cause_and_fix_agree_on_blackwell() -> None:
    a = analyze("sample_logs/formats/max-connections-hopper-tp")
    v = a.diagnosis.verdict
    assert "pre-Blackwell GPU (no FSDP)" not in v.cause
    facts = JobFacts(values={"gpu_generation": "Blackwell", "tp": 2})
    fix = tailor_fix(
        from_flat({"category": "cuda_device_max_connections", "text": ""}), "", facts, _geo()
    )
    assert "Blackwell" in fix and "pre-Blackwell GPUs needs" not in fix


def test_one_srun_task_per_gpu_makes_the_task_id_the_rank(tmp_path: Path) -> None:
    job = _job(
        tmp_path,
        "slurm-9.out",
        "2: [rank2]: Traceback (most recent call last):\n"
        '2: [rank2]:   File "train.py", line 3, in <module>\n'
        "2: [rank2]: ValueError: bad batch\n"
        "1: [rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
        "Connection closed by peer [127.0.0.1]:4321\n"
        "srun: error: gpu-node-001: task 2: Exited with exit code 1\n"
        "srun: error: gpu-node-001: task 1: Exited with exit code 1\n",
    )
    a = analyze(job)
    assert a.attributed.geometry.task_is_rank
    v = a.diagnosis.verdict
    assert v.rank == 2
    assert v.node == "gpu-node-001"
    assert v.node_index is None


def test_unlabelled_root_is_not_given_the_first_node_to_exit(tmp_path: Path) -> None:
    # Two nodes, no srun label: node 0's worker raised, node 1's agent happened to exit first.
    job = _job(
        tmp_path,
        "slurm-11.out",
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "ValueError: bad batch\n"
        "[W1202 17:21:00.000000000 socket.cpp:100] [c10d] sending SIGTERM\n"
        "some other output\n"
        "more output\n"
        "srun: error: node002: task 1: Exited with exit code 1\n"
        "srun: error: node001: task 0: Exited with exit code 1\n",
    )
    v = analyze(job).diagnosis.verdict
    assert v.category == "python_exception"
    assert v.node is None
    assert "no node is named" in (v.rank_note or "")


def test_checkpoint_save_is_the_phase_only_while_unfinished(tmp_path: Path) -> None:
    done = analyze(
        _job(
            tmp_path,
            "a.log",
            "saving checkpoint at iteration     100 to /ckpt\n"
            "  successfully saved checkpoint from iteration     100 to /ckpt\n"
            "RuntimeError: boom\n",
        )
    )
    assert done.facts.checkpoint_saving is False
    (tmp_path / "job" / "a.log").write_text(
        "saving checkpoint at iteration     200 to /ckpt\nRuntimeError: boom\n", encoding="utf-8"
    )
    assert analyze(tmp_path / "job").facts.checkpoint_saving is True


def _geo():  # type: ignore[no-untyped-def]
    from analyzer.shape.attribute import Geometry

    return Geometry()


def test_catalog_json_schema_accepts_the_shipped_catalog_and_the_readme_example() -> None:
    import json
    import re
    import tomllib

    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(Path("docs/schema/catalog.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    for f in sorted(Path("patterns").glob("*.toml")):
        errors = list(validator.iter_errors(tomllib.loads(f.read_text(encoding="utf-8"))))
        assert not errors, (f.name, errors[0].message)
    readme = Path("docs/catalog.md").read_text(encoding="utf-8")
    example = re.search(r"```toml\n(\[\[pattern\]\].*?)```", readme, re.S)
    assert example
    data = tomllib.loads(example.group(1))
    assert not list(validator.iter_errors(data))
    bad = {"pattern": [{**data["pattern"][0], "counter_example": ["x"]}]}
    assert list(validator.iter_errors(bad))


def test_fingerprints_come_from_structured_keys_not_wording() -> None:
    from analyzer.decide.fingerprint import fingerprint

    frame = 'File "/a/b/train.py", line 187, in get_batch'
    a = fingerprint(
        "python_exception",
        "python.traceback",
        "index 160 out of bounds",
        exc_type="IndexError",
        frame=frame,
    )
    b = fingerprint(
        "python_exception",
        "python.traceback",
        "index 99 is out of range now",
        exc_type="IndexError",
        frame=frame.replace("187", "190"),
    )
    assert a == b
    c = fingerprint(
        "python_exception",
        "python.traceback",
        "index 160 out of bounds",
        exc_type="IndexError",
        frame=frame.replace("get_batch", "collate"),
    )
    assert a != c
    assert fingerprint("python_exception", "x", "m", exc_type="KeyError") != fingerprint(
        "python_exception", "x", "m", exc_type="IndexError"
    )


def test_a_restart_suffix_or_cause_wording_never_changes_the_verdict_key() -> None:
    a = analyze("sample_logs/real/max-restarts").diagnosis.verdict
    b = analyze("sample_logs/real/exception-cascade").diagnosis.verdict
    assert "attempt" in a.cause
    assert "attempt" not in str(a.key)
    assert a.key["exc_type"] == b.key["exc_type"] == "IndexError"
    assert a.key["frame"].endswith("in get_batch") and b.key["frame"].endswith("in get_batch")


def test_catalog_json_schema_enums_are_the_code_tables() -> None:
    """The schema editors validate against names exactly what the loader accepts."""
    import json

    from analyzer.catalog import vocabulary as c

    schema = json.loads(Path("docs/schema/catalog.schema.json").read_text(encoding="utf-8"))
    p = schema["$defs"]["pattern"]["properties"]
    assert p["category"]["enum"] == list(c.CATEGORIES)
    assert p["role"]["enum"] == list(c.ROLES)
    assert p["tags"]["items"]["anyOf"][0]["enum"] == list(c.TAGS)
    typed = p["captures"]["additionalProperties"]["oneOf"]
    assert typed[0]["enum"] == list(c.CAPTURE_TYPES)
    assert typed[1]["properties"]["role"]["enum"] == list(c.CAPTURE_ROLES)


def test_decision_ids_are_documented_and_in_the_schema() -> None:
    """Every rule and rank rule id the reasoning records is in docs/decisions.md and the JSON
    Schema (scripts rely on the ids)."""
    import json

    from analyzer.catalog.claims import ClaimKind
    from analyzer.decide.docs import basis_kinds, schema_enums
    from analyzer.decide.ids import RankId, VerdictId

    doc = Path("docs/decisions.md").read_text(encoding="utf-8")
    schema = json.loads(Path("docs/schema/diagnose.schema.json").read_text(encoding="utf-8"))
    props = schema["$defs"]["verdict"]["properties"]
    enums = schema_enums()  # python -m analyzer.decide.docs docs/schema/diagnose.schema.json
    assert props["rule"]["enum"] == enums["rule"] == [*VerdictId, None]
    assert props["rank_rule"]["enum"] == enums["rank_rule"] == [*RankId, None]
    kinds = props["rank_basis"]["properties"]["kind"]["enum"]
    assert kinds == basis_kinds() == [*ClaimKind, "rank-rule", "shape"]
    for rid in [*VerdictId, *RankId]:
        assert f"`{rid}`" in doc, rid


def test_the_reasoning_writes_no_sentences() -> None:
    """Decide, then explain: rank notes and the reasoning's own causes come from
    decide/wording.py."""
    import re

    for mod in ("reason", "rules", "rank_decision", "assemble", "summary", "promote", "hangs",
                "unknown"):
        src = Path(f"analyzer/decide/{mod}.py").read_text(encoding="utf-8")
        assert not re.search(r"rank_note\s*=", src), mod
        assert not re.search(r"\bcause\s*=\s*\(?\s*f?\"", src), mod
        assert not re.search(r"\bfix\s*=\s*\(?\s*f?\"", src), mod


def test_hang_reasons_are_worded_from_the_rule_and_its_facts() -> None:
    """A hang finding records its rule and facts; hang_reason words every rule, and
    a Flight Recorder finding says whether the logs alone agreed."""
    from analyzer.decide.hangs import STRATEGIES, HangFinding, hang_reason

    missing = HangFinding(3, "missing", 0.65, [], {"rank": 3, "world": 8})
    assert missing.reason == (
        "rank 3 is the only rank of 8 that reported no collective timeout: the others were "
        "waiting for it"
    )
    none = hang_reason("none", {"missing": [1, 2], "world_known": True})
    assert none == (
        "the timeout reports do not single out one rank (2 ranks are missing from them: 1, 2)"
    )
    dumps = {"rank": 5, "shown": "rank 5 never joined", "logs_rule": "missing"}
    agree = hang_reason("dumps", {**dumps, "logs_rank": 5, "logs_detail": {}})
    assert agree.endswith("(the logs agree)")
    other = hang_reason(
        "dumps", {**dumps, "logs_rank": 3, "logs_detail": {"rank": 3, "world": 8}}
    )
    assert "(the logs alone pointed at rank 3: rank 3 is the only rank of 8" in other
    assert {s.id for s in STRATEGIES if isinstance(s.words, str)} == {
        "desync",
        "op-mismatch",
        "call-mismatch",
        "lowest-enqueued",
        "lowest-completed",
        "missing",
    }
