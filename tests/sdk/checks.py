"""The SDK scripts' checks: each prints one `ok N - what` line, and the first that fails
ends the script with an `AssertionError` (a non-zero exit)."""

from __future__ import annotations

_PASSED = 0


def ok(cond: bool, what: str) -> None:
    """Checks `cond`, named `what`."""
    global _PASSED
    if not cond:
        raise AssertionError(what)
    _PASSED += 1
    print(f"ok {_PASSED} - {what}", flush=True)


def passed() -> int:
    """How many checks passed so far."""
    return _PASSED
