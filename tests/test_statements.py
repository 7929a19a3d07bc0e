"""Statements: SQL files, fragments and slots."""

from __future__ import annotations

from localmem.storage.statements import Statements


def test_a_fragment_is_read_once_and_each_slot_filling_kept_apart() -> None:
    sql = Statements()
    base = sql.fragment("scope_base")
    assert "--" not in base and not base.endswith(";") and "m.archived = 0" in base
    assert sql.fragment("scope_base") is base  # kept, not rebuilt
    default_key = sql.fragment("scope_tags_exact_any_in")
    fts_key = sql.fragment("scope_tags_exact_any_in", scope_key="+f.rowid")
    assert "+f.rowid" in fts_key and "+f.rowid" not in default_key and "m.pk" in default_key
    assert sql.fragment("scope_tags_exact_any_in") is default_key
