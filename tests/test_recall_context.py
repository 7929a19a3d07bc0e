"""Context hints (automem-behaviour.md §1.6): language, profile, bonus, injection decision."""

from __future__ import annotations

import dataclasses

import pytest

from localmem.recall.context import (
    CONTEXT_STYLE_KEYWORDS,
    DEFAULT_STYLE_PRIORITY_TAGS,
    EXTENSION_LANGUAGE_MAP,
    LANGUAGE_ALIASES,
    ContextProfile,
    build_context_profile,
    context_bonus,
    context_priority_block,
    context_tag_hit,
    detect_language,
    matches_context_priority,
    needs_injection,
)


def profile(**overrides: object) -> ContextProfile | None:
    args: dict[str, object] = {
        "query": "", "context": "", "language": None, "active_path": None,
        "context_tags": [], "context_types": [], "priority_ids": [],
    }
    args.update(overrides)
    return build_context_profile(**args)  # type: ignore[arg-type]


def required(**overrides: object) -> ContextProfile:
    built = profile(**overrides)
    assert built is not None
    return built


# --- constants ---------------------------------------------------------------


def test_constants() -> None:
    assert list(LANGUAGE_ALIASES) == [
        "python", "typescript", "javascript", "go", "rust", "java", "csharp", "cpp", "swift"]
    assert LANGUAGE_ALIASES["csharp"] == {"csharp", "c#", "cs"}
    assert LANGUAGE_ALIASES["cpp"] == {"c++", "cpp", "cc", "cxx"}
    assert EXTENSION_LANGUAGE_MAP[".tsx"] == "typescript"
    assert EXTENSION_LANGUAGE_MAP[".rs"] == "rust"
    assert len(EXTENSION_LANGUAGE_MAP) == 13
    assert "pep8" in CONTEXT_STYLE_KEYWORDS and len(CONTEXT_STYLE_KEYWORDS) == 9
    assert DEFAULT_STYLE_PRIORITY_TAGS == {
        "coding-style", "style", "style-guide", "preferences", "preference:coding"}
    with pytest.raises(TypeError):
        LANGUAGE_ALIASES["elixir"] = frozenset()  # type: ignore[index]


# --- detect_language ---------------------------------------------------------


@pytest.mark.parametrize(
    ("explicit", "context", "query", "path", "expected"),
    [
        ("Py", "", "", None, "python"),            # alias, case-insensitive
        (" golang ", "", "", None, "go"),
        ("python", "rust", "java tips", "main.go", "python"),  # explicit wins over all
        ("elixir", "ts", "", None, "typescript"),  # unknown explicit falls through to context
        ("", "rust", "python tips", "main.go", "rust"),        # context beats path and query
        ("", "python style", "", None, None),      # the whole label must name a language
        ("", "", "python tips", "src/App.tsx", "typescript"),  # path beats query
        ("", "", "", "/x/Main.GO", "go"),          # suffix lowercased
        ("", "", "", "lib/thing.hpp", None),
        ("", "", "rust tips", "README.md", "rust"),  # unknown extension falls to the query
        ("", "", "", "Makefile", None),
        ("", "", "time to go home", None, "go"),   # the English word "go" selects Go
        ("", "", "C++ or C# style?", None, "csharp"),  # dict order: csharp before cpp
        ("", "", "rust or python", None, "python"),    # dict order, not query order
        ("", "", "I like python.", None, None),    # "python." keeps the dot
        ("", "", "deploy notes", None, None),
        (None, "", "", None, None),
    ],
)
def test_detect_language(explicit: str | None, context: str, query: str, path: str | None,
                         expected: str | None) -> None:
    assert detect_language(explicit, context, query, path) == expected


# --- build_context_profile ---------------------------------------------------


def test_no_hints_no_profile() -> None:
    assert profile() is None
    assert profile(query="what did we decide about the database") is None
    assert profile(context_tags=["", "  "], context_types=[" "], priority_ids=[""]) is None


def test_plain_context_label_is_a_priority_tag() -> None:
    p = required(context="Programming Task")
    assert p.priority_tags == {"programming task"}
    assert p.priority_types == frozenset()
    assert p.priority_keywords == frozenset()
    assert p.style_focus is False and p.language is None
    assert p.context_label == "programming task"


def test_manual_hints_are_normalised() -> None:
    p = required(context_tags=[" Coding ", "Project:Foo", ""],
                 context_types=["style", "DECISION", " "],
                 priority_ids=["b", " a ", "b", ""])
    assert p.priority_tags == {"coding", "project:foo"}
    assert p.priority_types == {"Style", "Decision"}
    assert p.priority_ids == ("b", "a")  # ordered, unique
    assert p.style_focus is False


def test_priority_ids_alone_make_a_profile() -> None:
    p = required(priority_ids=["id-1"])
    assert p.priority_ids == ("id-1",)
    assert not (p.priority_tags or p.priority_types or p.priority_keywords)


def test_language_turns_on_style_focus() -> None:
    p = required(query="how do I name things", active_path="web/App.tsx")
    assert p.language == "typescript"
    assert p.style_focus is True
    assert p.priority_tags == {"typescript", "typescript-style", "typescript:style"} | DEFAULT_STYLE_PRIORITY_TAGS
    assert p.priority_types == {"Style", "Preference"}
    assert p.priority_keywords == {"typescript"}


def test_language_label_is_not_added_as_context_tag_twice() -> None:
    p = required(context="Python")
    assert p.language == "python"
    assert "python" in p.priority_tags and p.style_focus


@pytest.mark.parametrize(
    ("context", "query"),
    [("style guidelines", ""), ("", "what are my lint rules"), ("", "PEP8 formatting"),
     ("team preferences", "")],
)
def test_style_keywords_turn_on_style_focus(context: str, query: str) -> None:
    p = required(context=context, query=query)
    assert p.style_focus is True
    assert p.language is None
    assert p.priority_keywords == frozenset()
    assert p.priority_tags == DEFAULT_STYLE_PRIORITY_TAGS  # the label itself is not added
    assert p.priority_types == {"Style", "Preference"}


def test_style_word_must_be_a_token() -> None:
    # "stylesheet" is not "style"; the label becomes a plain priority tag.
    p = required(context="stylesheet")
    assert p.style_focus is False and p.priority_tags == {"stylesheet"}


def test_profile_is_immutable_and_weights_are_class_constants() -> None:
    p = required(context="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.style_focus = True  # type: ignore[misc]
    assert (ContextProfile.TAG_WEIGHT, ContextProfile.TYPE_WEIGHT,
            ContextProfile.KEYWORD_WEIGHT, ContextProfile.ANCHOR_WEIGHT) == (0.45, 0.25, 0.2, 0.9)
    assert "TAG_WEIGHT" not in {f.name for f in dataclasses.fields(ContextProfile)}


# --- context_tag_hit ---------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "priority", "expected"),
    [
        ("python:style", "python:style", True),
        ("python/style", "python:style", True),    # separators canonicalised
        ("Python::Style", "python//style", True),  # runs collapse, case folded
        ("pythonic", "python", True),              # startswith
        ("lang:python:tips", "python", True),      # substring
        ("coding-style-guide", "style", True),
        ("py", "python", False),
        ("rust", "python", False),
        ("anything", "", False),                   # empty priority never hits
    ],
)
def test_context_tag_hit(tag: str, priority: str, expected: bool) -> None:
    assert context_tag_hit(tag, priority) is expected


# --- context_bonus -----------------------------------------------------------


def test_bonus_without_profile_is_zero() -> None:
    assert context_bonus(None, {"id": "m", "tags": ["style"], "type": "Style"}, {"python"}) == 0.0


def test_style_bonus_adds_up() -> None:
    p = required(language="python", priority_ids=["m1"])
    memory = {"id": "m1", "tags": ["python/style", "style", "misc"], "type": " style "}
    # tag 0.45 (once, though two tags hit) + type 0.25 + keyword 0.2 + anchor 0.9 = 1.8
    assert context_bonus(p, memory, {"python", "pep8"}) == pytest.approx(1.8)
    # Without the id anchor and without "python" among metadata terms: 0.45 + 0.25 = 0.7
    other = {"id": "m2", "tags": ["python/style"], "type": "Style"}
    assert context_bonus(p, other, {"ruff"}) == pytest.approx(0.7)


def test_keyword_part_reads_metadata_terms_only() -> None:
    p = required(language="python")
    tagged = {"id": "t", "tags": ["python"], "type": "Context"}
    assert context_bonus(p, tagged, set()) == pytest.approx(0.45)  # tag only, not +0.2 again
    described = {"id": "d", "tags": [], "type": "Context"}
    assert context_bonus(p, described, {"python"}) == pytest.approx(0.2)


def test_type_and_tag_bonus_from_manual_hints() -> None:
    p = required(context_tags=["project:foo"], context_types=["decision"])
    assert context_bonus(p, {"id": "x", "tags": ["Project/Foo/Bar"], "type": "decision"},
                         set()) == pytest.approx(0.7)
    assert context_bonus(p, {"id": "x", "tags": ["project"], "type": "Insight"}, set()) == 0.0
    assert context_bonus(p, {"id": "x", "tags": None, "type": None}, set()) == 0.0


# --- matches_context_priority / needs_injection ------------------------------


def test_injection_match_does_not_canonicalise_separators() -> None:
    p = required(context_tags=["python:style"])
    result = {"id": "r", "memory": {"id": "r", "tags": ["python/style"], "type": "Context"}}
    assert matches_context_priority(p, result) is False
    assert context_bonus(p, result["memory"], set()) == pytest.approx(0.45)  # scoring does
    colon = {"id": "r", "memory": {"tags": ["Python:Style:Strict"], "type": "Context"}}
    assert matches_context_priority(p, colon) is True


def test_injection_match_by_id_type_and_substring() -> None:
    p = required(context_types=["preference"], priority_ids=["keep"], context_tags=["infra"])
    assert matches_context_priority(p, {"id": "keep", "memory": {}})
    assert matches_context_priority(p, {"memory": {"id": "keep"}})
    assert matches_context_priority(p, {"id": "z", "memory": {"type": "preference"}})
    assert matches_context_priority(p, {"id": "z", "memory": {"tags": ["team-infra-notes"]}})
    assert not matches_context_priority(p, {"id": "z", "memory": {"tags": ["inf"], "type": "Habit"}})


def test_needs_injection() -> None:
    p = required(context_tags=["style"], priority_ids=["a"])
    hit = {"id": "a", "memory": {"tags": ["style"]}}
    miss = {"id": "b", "memory": {"tags": ["other"]}}
    assert needs_injection(None, [miss]) is False
    assert needs_injection(p, [hit, miss]) is False
    assert needs_injection(p, [miss]) is True               # id "a" missing
    q = required(context_tags=["style"])
    assert needs_injection(q, [miss]) is True               # nothing matches
    assert needs_injection(q, [miss, {"id": "c", "memory": {"tags": ["style-guide"]}}]) is False
    assert needs_injection(q, []) is True


def test_context_priority_block() -> None:
    p = required(language="go")
    block = context_priority_block(p, injected=True)
    assert block == {
        "language": "go",
        "context": "",
        "priority_tags": ["coding-style", "go", "go-style", "go:style", "preference:coding",
                          "preferences", "style", "style-guide"],
        "priority_types": ["Preference", "Style"],
        "injected": True,
    }
    many = required(context_tags=[f"t{i:02d}" for i in range(15)])
    assert context_priority_block(many, False)["priority_tags"] == [f"t{i:02d}" for i in range(10)]


def test_canonical_tags_are_cached_only_up_to_a_stored_tag_s_length() -> None:
    from localmem.recall import context
    from localmem.tags import MAX_TAG_LENGTH
    long_tag = "Project/" + "x" * (MAX_TAG_LENGTH * 40)
    context._canonical_short_tag.cache_clear()
    assert context_tag_hit(long_tag, "PROJECT:" + "x" * (MAX_TAG_LENGTH * 40)) is True
    assert context._canonical_short_tag.cache_info().currsize == 0  # neither long string is kept
    assert context_tag_hit("PROJECT//Alpha", "project:alpha") is True
    assert context._canonical_short_tag.cache_info().currsize == 2
