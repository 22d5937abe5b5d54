"""The ASCII character classes the prefix readers test a line's next character against."""

from __future__ import annotations

DIGITS = frozenset("0123456789")
LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
