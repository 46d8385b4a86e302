"""The one exception tree of bundlewise.

BundlewiseError
 └── InputError          bad input or usage; the CLI prints ``error: <message>`` and exits 2
      └── HashOutOfRange a hash outside a namespace's bundle boundaries (Pulsar: IndexOutOfBounds)
"""

from __future__ import annotations


class BundlewiseError(Exception):
    """Base of every error bundlewise raises on purpose."""


class InputError(BundlewiseError, ValueError):
    """Bad input: the message names the file or field and what was expected."""

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None) -> None:
        self.source = source
        self.field = field
        parts = [p for p in (source, field) if p]
        super().__init__(": ".join([*parts, message]) if parts else message)

    def within(self, source: str) -> InputError:
        """The same error, attributed to ``source`` (a file name) when it has none yet."""
        if self.source is not None:
            return self
        err = InputError(str(self), source=source)
        err.field = self.field
        return err


class HashOutOfRange(InputError):
    """A hash below the first boundary or above the last one of a bundle set."""
