"""A comma-separated list of whole numbers given as one option (cuts, seeds), read or refused by name."""

from __future__ import annotations

import argparse


def whole_numbers(parser: argparse.ArgumentParser, option: str, text: str, least: int) -> list[int]:
    """``text`` as whole numbers, each at least ``least``; otherwise the parser's error naming ``option``."""
    try:
        numbers = [int(part) for part in text.split(",")]
    except ValueError:
        parser.error(f"{option}: comma-separated whole numbers (got {text!r})")
    if any(number < least for number in numbers):
        parser.error(f"{option}: each must be at least {least} (got {text!r})")
    return numbers
