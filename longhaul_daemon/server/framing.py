"""NDJSON framing: one JSON text per line, split on the byte ``\n`` only, with a per-frame size cap.

``str.splitlines()`` would also break at U+2028, U+0085 and friends, which are legal inside JSON strings, so
frames are split on bytes. JSON encoders escape newlines inside strings, so a reply is always exactly one
line.
"""

from __future__ import annotations

import anyio
from anyio.streams.buffered import BufferedByteStream

__all__ = ["FrameReader", "FrameTooLarge", "line"]

_NEWLINE = b"\n"


class FrameTooLarge(Exception):
    """A frame ran past the cap before its newline; the connection's read side is no longer usable."""

    def __init__(self, max_frame: int) -> None:
        super().__init__(f"frame larger than {max_frame} bytes")
        self.max_frame = max_frame


def line(payload: bytes) -> bytes:
    """One NDJSON line from an encoded JSON text (which never contains a raw newline)."""
    return payload + _NEWLINE


class FrameReader:
    """Yields frames from a buffered byte stream; blank lines are skipped, the end of stream is ``None``."""

    def __init__(self, stream: BufferedByteStream, max_frame: int) -> None:
        self._stream = stream
        self.max_frame = max_frame

    async def next_frame(self) -> bytes | None:
        """The next non-blank frame without its newline, or ``None`` once the client is gone (EOF or reset).

        A frame of exactly ``max_frame`` bytes is accepted; a longer one raises :class:`FrameTooLarge`. Bytes
        after the last newline at EOF are an incomplete frame and are dropped with the connection.
        """
        while True:
            try:
                # receive_until gives up once its buffer holds max_bytes without a newline, so +1 lets a
                # frame of exactly max_frame bytes through whatever the chunking.
                frame = await self._stream.receive_until(_NEWLINE, self.max_frame + 1)
            except anyio.DelimiterNotFound:
                raise FrameTooLarge(self.max_frame) from None
            except (
                anyio.IncompleteRead,
                anyio.EndOfStream,
                anyio.BrokenResourceError,
                anyio.ClosedResourceError,
            ):
                return None
            if len(frame) > self.max_frame:
                raise FrameTooLarge(self.max_frame)
            if frame and not frame.isspace():  # strip() would copy a whole frame to find out
                return frame
