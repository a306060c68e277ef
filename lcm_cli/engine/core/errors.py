"""Typed errors raised by operations.

Operations never print or exit: they raise :class:`LcmError` with a stable code.
The doors map the code to an exit status (``lcm_cli.engine.core.exit_codes``) and render it.
"""

from __future__ import annotations

from lcm_cli import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


_UNSET: Any = object()


class LcmError(Exception):
    """A failure with a stable machine-readable ``code`` and optional ``details``."""

    def __init__(self, code: str, message: str, details: Any = _UNSET) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    @property
    def has_details(self) -> bool:
        """True when the error carries a ``details`` value (even ``None``)."""
        return self.details is not _UNSET

    def to_dict(self) -> dict[str, Any]:
        """The ``error`` object of the failure envelope, secrets redacted (every door renders this)."""
        from lcm_cli.engine.core.redact import redact, redact_value

        out: dict[str, Any] = {"code": self.code, "message": redact(self.message)}
        if self.has_details:
            out["details"] = redact_value(self.details)
        return out


def invalid_argument(message: str, details: Any = _UNSET) -> LcmError:
    """An ``INVALID_ARGUMENT`` error (exit 2)."""
    return LcmError("INVALID_ARGUMENT", message, details)
