"""Test-suite settings: under CI, property tests draw the same examples on every run (a run
that passes keeps passing); locally they explore anew each time and keep what fails."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
