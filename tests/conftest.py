"""Test-wide set-up: sim-free mode is decided before any test imports habitat."""

import habitat_ver  # noqa: F401
