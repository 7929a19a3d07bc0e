"""Privacy: redaction of credentials and private regions before anything is written or shown."""

from .after_cue import AFTER_CUE_KIND, redact_after
from .redact import (KINDS, Redaction, find_secrets, placeholder_counts, redact, redact_fields, redact_item,
                     redact_items, redact_update, redaction_note, strip_private)

__all__ = ["AFTER_CUE_KIND", "KINDS", "Redaction", "find_secrets", "placeholder_counts", "redact", "redact_after",
           "redact_fields", "redact_item", "redact_items", "redact_update", "redaction_note", "strip_private"]
