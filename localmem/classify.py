"""Memory types: validation of caller-given types and the regex classifier (§2.4)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from localmem.errors import ValidationError
from localmem.regex_literals import required_substrings

__all__ = [
    "DEFAULT_TYPE",
    "FALLBACK_CONFIDENCE",
    "MEMORY_TYPES",
    "TYPE_ALIASES",
    "classify",
    "normalize_memory_type",
    "replacement_type",
]

MEMORY_TYPES: tuple[str, ...] = (
    "Decision",
    "Pattern",
    "Preference",
    "Style",
    "Habit",
    "Insight",
    "Context",
)

# AutoMem falls back to the non-canonical "Memory"; we use a canonical type.
DEFAULT_TYPE = "Context"
FALLBACK_CONFIDENCE = 0.3

_ALIAS_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Context",
        (
            "memory", "milestone", "document", "meeting_notes", "project",
            "timeline", "organization", "person", "personal_situation",
            "practical_info",
        ),
    ),
    ("Insight", ("analysis", "observation", "issue", "legal_analysis")),
    ("Pattern", ("template",)),
    (
        "Preference",
        (
            "interests", "personality", "emotional_patterns",
            "relationship_dynamics", "communication",
        ),
    ),
    ("Habit", ("health_habits",)),
)

TYPE_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        **{name.lower(): name for name in MEMORY_TYPES},
        **{alias: canonical for canonical, aliases in _ALIAS_GROUPS for alias in aliases},
    }
)

_TYPE_SEPARATORS = re.compile(r"[\s\-]+")

_WEEKDAYS = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_PEOPLE = r"(?:i|we|he|she|they|you)"

# Patterns run against lowercased content, types tried in MEMORY_TYPES order. AutoMem's
# patterns (automem-behaviour.md §2.4) with these changes, so that ordinary personal notes
# get a plausible type where AutoMem asks an LLM (and stores "Memory" 0.3 without one):
# - Habit's bare "always" matched instructions ("Allergic to penicillin - always mention it
#   to a new doctor" was a Habit); it now needs someone who always does it ("I always",
#   "she almost always"). Recurring times ("every morning", "twice a week", "on Sundays")
#   are habits too.
# - Preference also reads "I like / love / enjoy / hate / can't stand", "favourite", "I'd rather".
# - Decision also reads "settled on", "switched to", "decided on/against".
# - Insight also reads "turns out", "lesson learned", "noticed", "found out".
# - Context also reads facts about a person or thing (allergies, birthdays, whose doctor,
#   where someone lives or works, what is due or expires), not only "when" and "during".
_CLASSIFIER_PATTERNS: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...] = tuple(
    (memory_type, tuple(re.compile(pattern) for pattern in patterns))
    for memory_type, patterns in (
        (
            "Decision",
            (
                r"decided to", r"chose (\w+) over", r"going with", r"picked",
                r"selected", r"will use", r"choosing", r"opted for",
                r"settled on", r"switched to", r"decided (?:on|against)\b",
            ),
        ),
        (
            "Pattern",
            (
                r"usually", r"typically", r"tend to", r"pattern i noticed",
                r"often", r"frequently", r"regularly", r"consistently",
            ),
        ),
        (
            "Preference",
            (
                r"prefer", r"like.*better", r"favorite", r"always use",
                r"rather than", r"instead of", r"favor", r"favourite",
                rf"\b{_PEOPLE}(?:'d| would) rather\b",
                rf"\b{_PEOPLE} (?:really |also |just )?(?:like|love|enjoy|hate|dislike|adore|loathe)s?\b",
                r"\b(?:can't|cannot|can not) stand\b", r"\b(?:don't|doesn't|do not|does not) like\b",
                r"\bnot a fan of\b",
            ),
        ),
        (
            "Style",
            (
                r"wrote.*in.*style", r"communicated", r"responded to",
                r"formatted as", r"using.*tone", r"expressed as",
            ),
        ),
        (
            "Habit",
            (
                rf"\b{_PEOPLE} (?:almost |nearly )?always\b(?!\s+use\b)", r"every time", r"habitually",
                r"routine", r"daily", r"weekly", r"monthly",
                rf"\b(?:every|each) (?:morning|evening|night|day|week|weekend|month|{_WEEKDAYS})\b",
                r"\b(?:once|twice|three times|four times|\d+ times) a (?:day|week|month)\b",
                rf"\bon {_WEEKDAYS}s\b", r"\bon weekends\b",
            ),
        ),
        (
            "Insight",
            (
                r"realized", r"discovered", r"learned that", r"understood",
                r"figured out", r"insight", r"revelation",
                r"\bturn(?:s|ed) out\b", r"\blesson learn(?:ed|t)\b", r"\bnoticed\b", r"\bfound out\b",
            ),
        ),
        (
            "Context",
            (
                r"during", r"while working on", r"in the context of", r"when",
                r"at the time", r"situation was",
                r"\ballerg(?:ic|y|ies)\b", r"\bintoleran(?:t|ce)\b", r"\bbirthday\b",
                r"\b(?:my|our|his|her|their)(?: \w+)? (?:doctor|dentist|gp|landlord|manager|boss|partner|"
                r"wife|husband|sister|brother|mum|mom|dad|son|daughter|vet|accountant|physio|physiotherapist|"
                r"therapist|optician|pharmacist|coach|teacher|lawyer|plumber|mechanic)\b",
                r"\b(?:lives|lived|works|worked) (?:in|at|as|for)\b", r"\b(?:expires|is due|are due)\b",
                r"\b(?:phone number|address|email) is\b", r"\b(?:vegetarian|vegan)\b",
                r"\bappointment\b",
            ),
        ),
    )
)


# A note that opens with a type's name as a label ("Decision: move billing to ...",
# "Preference - window seats") says its type; the regex rules read that word as nothing.
_LABEL = re.compile(rf"\s*({'|'.join(name.lower() for name in MEMORY_TYPES)})s?\s*(?::|\s[-\u2013\u2014])")
LABEL_CONFIDENCE = 0.9
# A question states nothing: "Should we go with Redis rather than Memcached?" is no decision
# and no preference. Sentences that end in "?" are left out before the rules run.
_AFTER_SENTENCE = re.compile(r"(?<=[.!?\n])")

# Per pattern, substrings one of which every match contains (None: always search): a text
# with none of them is not searched for it. Most texts miss most patterns, and a substring
# test costs far less than a search, above all for a pattern that starts with \b.
_RULES: tuple[tuple[str, tuple[tuple[re.Pattern[str], frozenset[str] | None], ...]], ...] = tuple(
    (memory_type, tuple((p, required_substrings(p)) for p in patterns))
    for memory_type, patterns in _CLASSIFIER_PATTERNS
)


def normalize_memory_type(value: str) -> str:
    """Map a type name or alias (any case) to its canonical memory type.

    Spaces and hyphens count as underscores (``"meeting notes"`` → Context).
    Unknown or empty types raise ``ValidationError`` (AutoMem stores them as
    given; we reject them).
    """
    if isinstance(value, str):
        key = _TYPE_SEPARATORS.sub("_", value.strip().lower())
        canonical = TYPE_ALIASES.get(key)
        if canonical is not None:
            return canonical
    raise ValidationError(
        f"Invalid memory type {value!r}: 'type' must be one of "
        f"{', '.join(MEMORY_TYPES)}"
    )


def classify(content: str) -> tuple[str, float]:
    """Classify content by AutoMem's regex rules (extended, see above) into ``(type, confidence)``.

    A leading label naming a type ("Decision: ...") gives that type (0.9). Otherwise
    questions are left out and the first type (in MEMORY_TYPES order) with any
    pattern hit wins, with confidence 0.6, or 0.6 + 0.1 per matching pattern
    (≤ 0.95) when several of its patterns match. No hit → ``("Context", 0.3)``.
    """
    text = (content or "").lower().replace("\u2019", "'")  # a typographic apostrophe: can’t, I’d
    label = _LABEL.match(text)
    if label is not None:
        return label.group(1).capitalize(), LABEL_CONFIDENCE
    if "?" in text:
        text = " ".join(part for part in _AFTER_SENTENCE.split(text) if not part.rstrip().endswith("?"))
    for memory_type, rules in _RULES:
        matches = 0
        for pattern, required in rules:
            if required is not None:
                for part in required:
                    if part in text:
                        break
                else:
                    continue  # none of the substrings every match contains: no match
            if pattern.search(text):
                matches += 1
        if matches == 0:
            continue
        if matches == 1:
            return memory_type, 0.6
        # Rounded so stored confidences read 0.8, not 0.8000000000000002.
        return memory_type, round(min(0.95, 0.6 + 0.1 * matches), 4)
    return DEFAULT_TYPE, FALLBACK_CONFIDENCE


def replacement_type(content: str, replaced: Mapping[str, object]) -> dict[str, object]:
    """The type fields of a memory that replaces ``replaced`` (supersede) when no type is given.

    What the rules read in the new content wins; when they read nothing (the 0.3
    fallback), the replacement keeps the replaced memory's type and confidence: the
    new answer to a decision is a decision. ``{}`` when there is nothing to keep.
    """
    if not isinstance(content, str) or replaced.get("type") in (None, DEFAULT_TYPE) \
            or classify(content)[1] > FALLBACK_CONFIDENCE:
        return {}  # not text: the store's own validation names the field
    fields: dict[str, object] = {"type": replaced["type"]}
    if isinstance(replaced.get("confidence"), (int, float)):
        fields["confidence"] = replaced["confidence"]
    return fields
