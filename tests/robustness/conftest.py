"""The robustness suite's marker (registered here, not in pyproject)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: robustness cases that take several seconds (still run by .ci/run)"
    )
