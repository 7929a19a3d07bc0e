"""Privacy: redaction of credentials and private regions before anything is written or shown."""

from .redact import (KINDS, Redaction, find_secrets, placeholder_counts, redact, redact_fields, redact_item,
                     redact_items, redact_update, redaction_note, strip_private)

__all__ = ["KINDS", "Redaction", "find_secrets", "placeholder_counts", "redact", "redact_fields", "redact_item",
           "redact_items", "redact_update", "redaction_note", "strip_private"]
