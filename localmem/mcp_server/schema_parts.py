"""JSON-schema pieces the tool declarations share."""

STRING_LIST = {"type": "array", "items": {"type": "string"}}
UNIT = {"type": "number", "minimum": 0, "maximum": 1}
