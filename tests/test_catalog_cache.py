"""Catalog validation runs once per catalog content, remembered in the user's cache dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import analyzer.catalog.load as catalog_mod
from analyzer.catalog import cache as catalog_cache
from analyzer.catalog.load import load_catalog
from analyzer.catalog.model import CatalogError

USER_PATTERN = """
[[pattern]]
id = "user.thing"
category = "python_exception"
role = "root"
title = "a thing"
needles = ["thing broke"]
regex = '''thing broke: (?P<what>\\w+)'''
cause = "x"
fix = "y"
examples = ["thing broke: disk"]
"""


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Validation calls, with the cache in a fresh directory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(catalog_cache.NO_CACHE_ENV, raising=False)
    calls: list[str] = []
    real = catalog_mod.check_pattern

    def check(p: catalog_mod.Pattern) -> list[str]:
        calls.append(p.id)
        return real(p)

    monkeypatch.setattr(catalog_mod, "check_pattern", check)
    return calls


def test_second_load_skips_validation(counted: list[str], tmp_path: Path) -> None:
    load_catalog(use_env=False)
    assert counted, "the first load validates"
    n = len(counted)
    load_catalog(use_env=False)
    assert len(counted) == n
    markers = list((tmp_path / "cache" / "mcore-diagnose").iterdir())
    assert len(markers) == 1 and markers[0].name.startswith("validated-")


def test_changed_user_pattern_is_validated_again(counted: list[str], tmp_path: Path) -> None:
    f = tmp_path / "mine.toml"
    f.write_text(USER_PATTERN)
    load_catalog([f], use_env=False)
    load_catalog([f], use_env=False)
    assert counted.count("user.thing") == 1
    f.write_text(USER_PATTERN.replace('examples = ["thing broke: disk"]', 'examples = ["nope"]'))
    with pytest.raises(CatalogError, match=r"user\.thing"):
        load_catalog([f], use_env=False)
    with pytest.raises(CatalogError):  # a failure is never remembered
        load_catalog([f], use_env=False)
    assert counted.count("user.thing") == 3


def test_unwritable_cache_dir_still_validates(
    counted: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    load_catalog(use_env=False)
    n = len(counted)
    load_catalog(use_env=False)
    assert n and len(counted) == 2 * n
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        monkeypatch.setenv("XDG_CACHE_HOME", str(ro))
        load_catalog(use_env=False)
        assert len(counted) == 3 * n


def test_no_cache_env_bypasses_it(counted: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(catalog_cache.NO_CACHE_ENV, "1")
    load_catalog(use_env=False)
    load_catalog(use_env=False)
    assert len(counted) == 2 * len(set(counted))


def test_a_remembered_catalog_compiles_lazily_and_matches_the_same(counted: list[str]) -> None:
    from analyzer.catalog.load import iter_examples
    from analyzer.lines.prefixes import split_prefixes

    first = load_catalog(use_env=False)
    second = load_catalog(use_env=False)  # remembered: regexes compile on first use
    assert type(second.patterns[0].regex) is not type(first.patterns[0].regex)
    for (p, line, must), (q, _l, _m) in zip(
        iter_examples(first), iter_examples(second), strict=True
    ):
        msg = split_prefixes(line).message
        a, b = p.regex.search(msg), q.regex.search(msg)
        assert bool(a) == bool(b) == must
        assert (a and a.groupdict()) == (b and b.groupdict())


def _compiled(rx: object) -> bool:
    """Whether a lazy regex has been compiled (read without triggering the compile)."""
    try:
        type(rx).__dict__["search"].__get__(rx, type(rx))
    except AttributeError:
        return False
    return True


def test_a_remembered_catalog_loads_without_compiling(counted: list[str]) -> None:
    """Loading a remembered catalog compiles no regex: capture names are read from the
    sources (``named_groups``), which validation checked against the compiled regexes."""
    first = load_catalog(use_env=False)
    second = load_catalog(use_env=False)
    assert not any(_compiled(p.regex) for p in second.patterns)
    for p, q in zip(first.patterns, second.patterns, strict=True):
        assert set(p.captures) == set(q.captures) == set(p.regex.groupindex), p.id


def test_named_groups_reads_only_real_group_openings() -> None:
    src = r"a\(?P<no>b\)(?P<yes>c)\\(?<also>d)(?<=q)(?<!r)(?P=yes)[x]"
    assert catalog_cache.named_groups(src) == {"yes", "also"}
    import regex

    assert catalog_cache.named_groups(src) == set(regex.compile(src).groupindex)


def test_a_catalog_whose_group_names_cannot_be_read_is_not_remembered(
    counted: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should the source reading ever disagree with the compiled regex, the catalog is
    validated (and compiled) on every load instead of trusted."""
    monkeypatch.setattr(catalog_mod, "named_groups", lambda source: set())
    load_catalog(use_env=False)
    n = len(counted)
    load_catalog(use_env=False)
    assert len(counted) == 2 * n, "validated again: never remembered"


def test_a_remembered_catalog_is_not_parsed_again(
    counted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The marker keeps the files' parsed TOML: the second load reads it, not the files; a
    marker that cannot be read back sends the loader to the files again."""
    first = load_catalog(use_env=False)

    def no_toml(path: object) -> dict:
        raise AssertionError(f"parsed again: {path}")

    with monkeypatch.context() as m:
        m.setattr(catalog_mod, "_read_toml", no_toml)
        second = load_catalog(use_env=False)
    assert [p.id for p in second.patterns] == [p.id for p in first.patterns]
    assert [p.examples for p in second.patterns] == [p.examples for p in first.patterns]
    for marker in (catalog_cache.cache_dir() or Path()).glob("validated-*"):
        marker.write_text("{not json", encoding="utf-8")
    third = load_catalog(use_env=False)
    assert [p.id for p in third.patterns] == [p.id for p in first.patterns]
