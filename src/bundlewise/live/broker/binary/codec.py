"""Frames of Pulsar's binary protocol (the protocol specification's "Framing" section).

Every frame starts with two big-endian 32-bit sizes: the size of the rest of the frame, then the size
of the serialized ``BaseCommand`` that follows.  A frame that carries messages (``SEND``, ``MESSAGE``)
continues after the command with the magic number ``0x0e01``, a CRC32-C checksum of everything after
the checksum, the size of the ``MessageMetadata``, the metadata and the payload:

    [total][command size][command] [0x0e01][crc32c][metadata size][metadata][payload]

A frame may be at most ``maxMessageSize`` plus 10 KiB of headroom (``Commands#DEFAULT_MAX_MESSAGE_SIZE``
and the frame decoder's padding).  ``FrameReader`` splits a byte stream into ``Frame`` s and checks the
checksum of those that carry one; a broken checksum is reported on the frame (``checksum_ok``), not
raised, because the broker answers it with ``ChecksumError`` for that message only.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c

from bundlewise.live.broker.binary import wire_pb2 as pb

MAGIC_CRC32C = 0x0E01
FRAME_PADDING = 10 * 1024
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_SIZES = struct.Struct(">II")


class FrameError(Exception):
    """The byte stream is not Pulsar's framing (the connection is closed)."""


@dataclass(slots=True)
class Frame:
    command: pb.BaseCommand
    body: bytes | None = None  # ``[metadata size][metadata][payload]``, when the frame carries messages
    checksum_ok: bool = True
    checksum: int | None = None  # CRC32-C of body, when computed


def encode(command: pb.BaseCommand) -> bytes:
    """A frame without payload."""
    raw: bytes = command.SerializeToString()
    return _SIZES.pack(len(raw) + 4, len(raw)) + raw


def encode_with_body(command: pb.BaseCommand, body: bytes, checksum: int | None = None) -> bytes:
    """A frame with ``body`` (``[metadata size][metadata][payload]``) behind the CRC32-C magic."""
    raw: bytes = command.SerializeToString()
    crc = crc32c.crc32c(body) if checksum is None else checksum
    head = _SIZES.pack(4 + len(raw) + 6 + len(body), len(raw))
    return b"".join((head, raw, _U16.pack(MAGIC_CRC32C), _U32.pack(crc), body))


def body_of(metadata: pb.MessageMetadata, payload: bytes) -> bytes:
    """``[metadata size][metadata][payload]`` (what a producer sends and a consumer receives)."""
    raw: bytes = metadata.SerializeToString()
    return _U32.pack(len(raw)) + raw + payload


def split_body(body: bytes) -> tuple[pb.MessageMetadata, bytes]:
    """The metadata and payload of a body."""
    if len(body) < 4:
        raise FrameError("a message body shorter than its metadata size")
    (size,) = _U32.unpack_from(body, 0)
    if 4 + size > len(body):
        raise FrameError("a message body shorter than its metadata")
    meta = pb.MessageMetadata()
    meta.ParseFromString(body[4 : 4 + size])
    return meta, body[4 + size :]


class FrameReader:
    """Incremental decoder: ``feed`` bytes, get the complete frames."""

    def __init__(self, max_frame: int) -> None:
        self.max_frame = max_frame
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        self._buf += data
        frames: list[Frame] = []
        buf = self._buf
        pos = 0
        while len(buf) - pos >= 4:
            (total,) = _U32.unpack_from(buf, pos)
            if total > self.max_frame or total < 4:
                raise FrameError(f"frame size {total} outside 4..{self.max_frame}")
            if len(buf) - pos - 4 < total:
                break
            frames.append(self._frame(bytes(buf[pos + 4 : pos + 4 + total])))
            pos += 4 + total
        if pos:
            del buf[:pos]
        return frames

    @staticmethod
    def _frame(data: bytes) -> Frame:
        (size,) = _U32.unpack_from(data, 0)
        if 4 + size > len(data):
            raise FrameError("command size larger than the frame")
        command = pb.BaseCommand()
        try:
            command.ParseFromString(data[4 : 4 + size])
        except Exception as e:  # the protobuf runtime's DecodeError
            raise FrameError(f"undecodable command: {e}") from None
        rest = 4 + size
        if rest == len(data):
            return Frame(command)
        if len(data) - rest < 6 or _U16.unpack_from(data, rest)[0] != MAGIC_CRC32C:
            # a body without the checksum magic (protocol versions before v6): taken as is
            return Frame(command, data[rest:])
        (crc,) = _U32.unpack_from(data, rest + 2)
        body = data[rest + 6 :]
        actual = crc32c.crc32c(body)
        return Frame(command, body, actual == crc, actual)
