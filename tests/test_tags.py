from __future__ import annotations

import pytest

from localmem.errors import ValidationError
from localmem.tags import (
    canonical_prefix_filter,
    compute_tag_prefixes,
    normalize_tags,
    prepare_tag_filters,
)

TYPE_MESSAGE = "'tags' must be a list of strings or a single string"


# --- normalize_tags --------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, []),
        ("foo", ["foo"]),
        ("a,b", ["a,b"]),  # not comma-split by default (POST /memory semantics)
        ("  ", []),
        ([], []),
        ([" x ", "", "   ", "X", "y"], ["x", "y"]),
        (("Project:Foo", "project:foo", "other"), ["Project:Foo", "other"]),
    ],
)
def test_normalize_tags(value: object, expected: list[str]) -> None:
    assert normalize_tags(value) == expected


def test_normalize_tags_split_commas() -> None:
    assert normalize_tags("a, b,,c ,A", split_commas=True) == ["a", "b", "c"]
    # Lists are never split: a comma inside a list item is part of the tag.
    assert normalize_tags(["a,b"], split_commas=True) == ["a,b"]


@pytest.mark.parametrize("value", [5, 1.5, True, {"a": 1}, {"a"}, ["a", 1], [None], [["a"]]])
def test_normalize_tags_rejects_bad_types(value: object) -> None:
    with pytest.raises(ValidationError) as excinfo:
        normalize_tags(value)
    assert excinfo.value.message == TYPE_MESSAGE


def test_normalize_tags_length_limit() -> None:
    assert normalize_tags(["t" * 256]) == ["t" * 256]
    # Surrounding whitespace is stripped before the length check.
    assert normalize_tags([" " + "t" * 256 + " "]) == ["t" * 256]
    with pytest.raises(ValidationError, match="257 characters"):
        normalize_tags(["t" * 257])


def test_normalize_tags_rejects_nul() -> None:
    with pytest.raises(ValidationError, match="NUL"):
        normalize_tags(["ok", "bad\x00tag"])


# --- compute_tag_prefixes --------------------------------------------------


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        (["Project:Foo/Bar"], ["project", "project:foo", "project:foo:bar"]),
        (["a::b"], ["a", "a:b"]),
        (["/lead/"], ["lead"]),
        (["::", "/"], []),
        (["a:b", "a:c", "A/B"], ["a", "a:b", "a:c"]),
        (["plain", "Plain"], ["plain"]),
        (["slack:channel:general"], ["slack", "slack:channel", "slack:channel:general"]),
        ([], []),
    ],
)
def test_compute_tag_prefixes(tags: list[str], expected: list[str]) -> None:
    assert compute_tag_prefixes(tags) == expected


# --- filters ---------------------------------------------------------------


def test_prepare_tag_filters() -> None:
    assert prepare_tag_filters([" Foo ", "foo", "", "Bar", "Project/Foo"]) == [
        "foo",
        "bar",
        "project/foo",  # separators are left alone here
    ]
    assert prepare_tag_filters(None) == []
    assert prepare_tag_filters("X") == ["x"]


def test_prepare_tag_filters_rejects_non_strings() -> None:
    with pytest.raises(ValidationError):
        prepare_tag_filters(["a", 3])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("Project/Foo", "project:foo"),
        ("project:foo", "project:foo"),
        ("a::b/", "a:b"),
        (" Slack/Channel:General ", "slack:channel:general"),
        ("::", ""),
    ],
)
def test_canonical_prefix_filter(tag: str, expected: str) -> None:
    assert canonical_prefix_filter(tag) == expected


def test_prefix_filter_matches_whole_segments_only() -> None:
    prefixes = set(compute_tag_prefixes(["project:foo:bar"]))
    assert canonical_prefix_filter("project/foo") in prefixes
    assert canonical_prefix_filter("PROJECT") in prefixes
    assert canonical_prefix_filter("proj") not in prefixes
    assert canonical_prefix_filter("project:fo") not in prefixes
