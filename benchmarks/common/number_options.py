"""Whole numbers given as options (a count; a comma-separated list: cuts, seeds), read or refused by name."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole_number(least: int) -> Callable[[str], int]:
    """An argparse ``type``: one whole number, at least ``least``; otherwise argparse's error,
    which names the option."""
    def read(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"a whole number (got {text!r})") from None
        if number < least:
            raise argparse.ArgumentTypeError(f"must be at least {least} (got {number})")
        return number
    return read


def whole_numbers(least: int) -> Callable[[str], list[int]]:
    """An argparse ``type``: the option's text as whole numbers, each at least ``least``;
    otherwise argparse's error, which names the option."""
    def read(text: str) -> list[int]:
        try:
            numbers = [int(part) for part in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"comma-separated whole numbers (got {text!r})") from None
        if any(number < least for number in numbers):
            raise argparse.ArgumentTypeError(f"each must be at least {least} (got {text!r})")
        return numbers
    return read


def joined(numbers: list[int]) -> str:
    """The numbers as the option is written: ``0,1,2``."""
    return ",".join(map(str, numbers))
