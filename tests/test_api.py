"""The Python API as a user meets it in a notebook or a script."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer import analyze


def test_missing_path_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such job directory") as err:
        analyze(tmp_path / "missing" / "path")
    assert err.value.filename == str(tmp_path / "missing" / "path")


def test_missing_path_is_a_problem_with_missing_ok(tmp_path: Path) -> None:
    a = analyze(tmp_path / "gone", missing_ok=True)
    assert not a.read.readable and "no such file" in a.read.problems[0]
    assert a.diagnosis.exit_code == 3


def test_empty_directory_gives_exit_code_3_as_the_cli(tmp_path: Path) -> None:
    a = analyze(tmp_path)
    assert a.diagnosis.status == "unknown" and a.diagnosis.exit_code == 3


def test_by_rank_has_one_row_per_rank_of_the_world_and_no_null_rank() -> None:
    a = analyze("sample_logs/formats/cuda-oom-cascade")  # 8 ranks, 3 of them without events
    df = a.by_rank()
    assert df["rank"].to_list() == list(range(8))
    quiet = df.filter(df["rank"] == 6).row(0, named=True)
    assert quiet["events"] == 0 and quiet["first_time"] is None
    assert (quiet["node"], quiet["local_rank"]) == ("gpu-node-002", 2)
    assert df.filter(df["rank"] == 5)["first_category"].item() == "cuda_oom"


def test_by_rank_without_any_ranked_event_still_lists_the_world() -> None:
    a = analyze("sample_logs/real/two-agents-per-node")  # only node-level rendezvous lines
    assert not [e for e in a.rows if e.rank is not None]
    df = a.by_rank()
    assert df["rank"].to_list() == [0, 1, 2, 3]
    assert df["rank"].null_count() == 0


def test_the_agents_store_count_is_not_the_world_size() -> None:
    """torchrun's own rendezvous store (``static_tcp_rendezvous``) counts its agents, one per
    node: "1/2 clients joined" says 2 nodes, not a world of 2 (was world 2, "2 x 1 GPUs")."""
    g = analyze("sample_logs/real/wrong-master-port").attributed.geometry
    assert (g.world_size, g.nnodes) == (None, 2)
    g = analyze("sample_logs/real/two-agents-per-node").attributed.geometry
    assert (g.world_size, g.nproc_per_node, g.nnodes) == (4, 2, 2)


def test_repr_is_one_short_line_with_the_verdict() -> None:
    a = analyze("sample_logs/formats/cuda-oom-cascade")
    r = repr(a)
    assert len(r) < 300 and "\n" not in r
    assert "cuda_oom rank=5 node=gpu-node-002" in r and "1 file," in r


def test_notebook_views_show_the_report_escaped(tmp_path: Path) -> None:
    d = tmp_path / "job"
    d.mkdir()
    (d / "slurm-1.out").write_text(
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "t.py", line 1, in <module>\n'
        "[rank0]: ValueError: <script>alert(1)</script>\n"
    )
    a = analyze(d)
    html = a._repr_html_()
    assert html.startswith("<iframe sandbox srcdoc=") and "<script" not in html
    assert "python_exception" in html
    assert a._repr_markdown_().startswith("# mcore-diagnose")


def test_public_functions_document_every_parameter() -> None:
    import inspect

    from analyzer.report import render

    for fn in (analyze, render):
        doc = inspect.getdoc(fn) or ""
        for name in inspect.signature(fn).parameters:
            assert f"{name}:" in doc, f"{fn.__name__} does not document {name}"


def test_package_is_typed() -> None:
    import analyzer

    assert (Path(analyzer.__file__).parent / "py.typed").is_file()


@pytest.mark.parametrize("job", ["max-restarts", "exception-cascade"])
def test_diagnosis_reads_the_rows_without_changing_them(job: str) -> None:
    """The diagnosis is computed on ``a.rows`` themselves (no copy: the table of a large job
    is its largest structure); restart attempts it assigns go to rows of its own."""
    a = analyze(f"sample_logs/real/{job}", workers=1)
    rows = list(a.rows)
    before = [(r.structural(), dict(r.captures), dict(r.roles)) for r in rows]
    d = a.diagnosis
    assert a.rows == rows and all(x is y for x, y in zip(a.rows, rows, strict=True))
    assert [(r.structural(), dict(r.captures), dict(r.roles)) for r in rows] == before
    if job == "max-restarts":
        assert d.verdict.attempt is not None
