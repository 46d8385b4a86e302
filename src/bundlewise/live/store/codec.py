"""How recipes turn values into node bytes: a ``Codec`` (encode/decode); JSON by default.

Pulsar stores every load-manager value as Jackson JSON (the shapes are listed in docs/live/); the
default codec writes compact JSON and compares decoded values, so key order never matters.
"""

from __future__ import annotations

import json
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Codec(Protocol[T]):
    def encode(self, value: T) -> bytes: ...

    def decode(self, data: bytes) -> T: ...


class JsonCodec:
    """JSON values (dicts, lists, numbers, strings) ↔ compact UTF-8 JSON."""

    def encode(self, value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":")).encode()

    def decode(self, data: bytes) -> Any:
        return json.loads(data) if data else None


class BytesCodec:
    """Raw node bytes, unchanged."""

    def encode(self, value: bytes) -> bytes:
        return value

    def decode(self, data: bytes) -> bytes:
        return data


JSON: Codec[Any] = JsonCodec()
BYTES: Codec[bytes] = BytesCodec()
