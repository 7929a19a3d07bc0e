"""A credential given on its own, in the message after the one naming it (issue 40).

"what's the db password?" then a message that is only ``S3cretValue!9x``: the second message says nothing of
being a secret, and a lone-token rule without context would take commit hashes and file names too. So
``redact_after(previous_tail, text)`` looks at the end of the previous message: when it ends in a credential cue
(a credential word of ``redact``'s own list, then nothing but ``is``, ``:``, ``=``, "here it is", ``?`` and the
like) and ``text`` is one token-like value (letters with a digit or a symbol, 6 to 200 characters, not a
placeholder, a path, a dotted name, a flag or a snake- or kebab-case name), maybe after filler ("sure, it's …"),
that value is replaced by ``[redacted: credential-after-cue]``. Everything else is ``redact(text, private=False)``.
"""

from __future__ import annotations

import re

from .patterns import SECRET_WORD
from .redact import _NOT_A_VALUE, _PLACEHOLDER_FOUND, _PLACEHOLDER_VALUES, Redaction, redact

AFTER_CUE_KIND = "credential-after-cue"
TAIL_CHARS = 200  # of the previous message looked at: the cue ends it
MAX_REPLY_CHARS = 120  # a longer message is not a credential given on its own
MAX_REPLY_WORDS = 6

_FILLER = r"(?:is|are|was|here|it|below|please|now|again|then|one|you|go)"
_CUE = re.compile(r"(?i)(?<![a-z])" + SECRET_WORD + r"s?(?![a-z])(?:[\s:=?.!,'\"`\-]|\b" + _FILLER + r"\b)*\Z")
_REPLY_FILLER = frozenset({"sure", "ok", "okay", "yes", "yeah", "yep", "here", "it", "it's", "its", "is", "it’s",
                           "the", "my", "this", "one", "you", "go", "there"})
_WORD = re.compile(r"\S+")
_QUOTES = "`'\"“”‘’"
_SYMBOL = re.compile(r"[!@#$%^&*+=_~\-]")


def ends_in_cue(previous_tail: str | None) -> bool:
    """Whether a message ends by naming or asking for a credential ("my db password is", "paste your API key.")."""
    return bool(previous_tail) and _CUE.search(previous_tail[-TAIL_CHARS:].rstrip()) is not None


# A name, not a value: a flag (``--browser``), a list item (``pkcs12,``), ``name=value`` or ``name(1)``/``[…]``,
# a constant (PAM_NEW_AUTHTOK_REQD), a snake_case or kebab-case name (open_session, scram-sha-256).
_A_NAME = re.compile(r"-.*|.*,|.*[(\[{].*|.*=.*[^=]|[A-Z][A-Z0-9_\-]*|[a-z][a-z0-9]*(?:[_\-][a-z0-9]+)+")


def _token_like(value: str) -> bool:
    if not 6 <= len(value) <= 200 or "://" in value or _PLACEHOLDER_FOUND.search(value):
        return False
    if _PLACEHOLDER_VALUES.match(value) or _NOT_A_VALUE.match(value) or _A_NAME.fullmatch(value):
        return False
    return any(c.isalpha() for c in value) and (any(c.isdigit() for c in value) or bool(_SYMBOL.search(value)))


def lone_value(text: str) -> tuple[int, int] | None:
    """The span of ``text``'s one token-like value when nothing but filler comes before it and nothing after."""
    if len(text) > MAX_REPLY_CHARS:
        return None
    words = list(_WORD.finditer(text))
    if not words or len(words) > MAX_REPLY_WORDS:
        return None
    *before, last = words
    if any(word.group().strip(_QUOTES + ",.:;!?").lower() not in _REPLY_FILLER
           and not re.fullmatch(r"(?i)" + SECRET_WORD + "s?", word.group().strip(_QUOTES + ",.:;!?"))
           for word in before):
        return None
    start, end = last.span()
    while start < end and text[start] in _QUOTES:
        start += 1
    while end > start and text[end - 1] in _QUOTES + ".":
        end -= 1
    return (start, end) if _token_like(text[start:end]) else None


def redact_after(previous_tail: str | None, text: str) -> Redaction:
    """``text`` redacted as ``redact(text, private=False)`` does, and its lone value too when the previous message
    of the conversation (``previous_tail``, its end is enough) ends in a credential cue."""
    result = redact(text, private=False)
    if result.changed or not ends_in_cue(previous_tail):
        return result
    span = lone_value(text)
    if span is None:
        return result
    start, end = span
    return Redaction(f"{text[:start]}[redacted: {AFTER_CUE_KIND}]{text[end:]}", {AFTER_CUE_KIND: 1})
