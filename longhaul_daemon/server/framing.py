"""NDJSON framing: one JSON text per line, split on ``\n`` only; a per-frame cap, a byte budget for all
connections, and read buffers that give their memory back.

``str.splitlines()`` would also break at U+2028, U+0085 and friends, which are legal inside JSON strings, so
frames are split on bytes. JSON encoders escape newlines inside strings, so a reply is always exactly one
line.

The reader keeps its own buffer instead of anyio's ``BufferedByteStream``, for what the socket fuzzer found
(docs/reliability.md): every byte it holds counts against a :class:`ByteBudget` shared by all connections,
so many connections sending frames at the cap cannot each hold one; a frame that fills the whole buffer is
handed over as the buffer itself (no second copy of a frame at the cap), and a buffer that grew past
:data:`KEEP_BUFFER_BYTES` is dropped once its frame is out, so an idle connection holds kilobytes, not the
largest frame it ever read; and the connection's timeout watcher can see whether a frame has begun
(:attr:`FrameReader.partial`) and when bytes last arrived (:attr:`FrameReader.progress_at`).
"""

from __future__ import annotations

import sys

import anyio
from anyio.abc import ByteReceiveStream

__all__ = [
    "KEEP_BUFFER_BYTES",
    "READ_CHUNK",
    "ByteBudget",
    "ByteBudgetExceeded",
    "Frame",
    "FrameReader",
    "FrameTooLarge",
    "line",
]

_NEWLINE = b"\n"
READ_CHUNK = 256 * 1024
"""Bytes asked of the socket per read."""

KEEP_BUFFER_BYTES = 1024 * 1024
"""A read buffer larger than this is replaced by a fresh one once the frames in it are out."""

Frame = bytes | bytearray
"""A frame without its newline; both parsers read either type, and a bytearray frame avoids a copy."""


class FrameTooLarge(Exception):
    """A frame ran past the cap before its newline; the connection's read side is no longer usable."""

    def __init__(self, max_frame: int) -> None:
        super().__init__(f"frame larger than {max_frame} bytes")
        self.max_frame = max_frame


class ByteBudgetExceeded(Exception):
    """The bytes buffered across all connections would pass the daemon's cap; this connection is refused."""


class ByteBudget:
    """Bytes held in read buffers and in frames being handled, across every connection of the daemon."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.peak = 0

    def take(self, count: int) -> bool:
        """Reserve ``count`` bytes; False (nothing reserved) when that would pass the limit."""
        if self.used + count > self.limit:
            return False
        self.used += count
        self.peak = max(self.peak, self.used)
        return True

    def give(self, count: int) -> None:
        """Release ``count`` bytes taken with :meth:`take`."""
        self.used -= count


def line(payload: bytes) -> bytes:
    """One NDJSON line from an encoded JSON text (which never contains a raw newline)."""
    return payload + _NEWLINE


class FrameReader:
    """Yields frames from a byte stream; blank lines are skipped, the end of stream is ``None``.

    Each returned frame keeps its bytes reserved in ``budget``; the caller gives them back with
    :meth:`release` once it has finished with the frame.
    """

    def __init__(self, stream: ByteReceiveStream, max_frame: int, budget: ByteBudget | None = None) -> None:
        self._stream = stream
        self.max_frame = max_frame
        self._budget = budget if budget is not None else ByteBudget(2**62)
        self._buffer = bytearray()
        self._scanned = 0  # the buffer's first bytes known to hold no newline
        self.receiving = False  # waiting on the socket right now
        self.progress_at = anyio.current_time()  # when a read began or bytes last arrived

    @property
    def partial(self) -> bool:
        """True when part of a frame has arrived and its newline has not."""
        return bool(self._buffer)

    def capacity(self) -> int:
        """Bytes the read buffer has allocated now (what an idle connection costs)."""
        return sys.getsizeof(self._buffer)

    def release(self, frame: Frame) -> None:
        """Give back the budget of a frame this reader returned."""
        self._budget.give(len(frame))

    def close(self) -> None:
        """Give back the budget of whatever is still buffered, and the buffer itself."""
        self._budget.give(len(self._buffer))
        self._buffer = bytearray()

    def _take_frame(self, index: int) -> Frame:
        """The bytes before the newline at ``index``, out of the buffer; the newline's byte is given back."""
        frame: Frame
        if index == len(self._buffer) - 1:  # the frame is the whole buffer: hand the buffer itself over
            whole = self._buffer
            del whole[index:]
            frame, self._buffer = whole, bytearray()
        else:
            with memoryview(self._buffer) as view:
                frame = bytes(view[:index])
            del self._buffer[: index + 1]
            if len(self._buffer) < KEEP_BUFFER_BYTES < len(frame):  # do not keep a large frame's capacity
                self._buffer = bytearray(self._buffer)
        self._scanned = 0
        self._budget.give(1)
        return frame

    async def next_frame(self) -> Frame | None:
        """The next non-blank frame without its newline, or ``None`` once the client is gone (EOF or reset).

        A frame of exactly ``max_frame`` bytes is accepted; a longer one raises :class:`FrameTooLarge`, and
        bytes the daemon-wide budget cannot hold raise :class:`ByteBudgetExceeded`. Bytes after the last
        newline at EOF are an incomplete frame and are dropped with the connection.
        """
        while True:
            index = self._buffer.find(_NEWLINE, self._scanned)
            if index >= 0:
                frame = self._take_frame(index)
                if frame and not frame.isspace():  # strip() would copy a whole frame to find out
                    return frame
                self.release(frame)
                continue
            self._scanned = len(self._buffer)
            if len(self._buffer) > self.max_frame:
                raise FrameTooLarge(self.max_frame)
            chunk = await self._receive()
            if chunk is None:
                return None
            if not self._budget.take(len(chunk)):
                raise ByteBudgetExceeded()
            self._buffer += chunk

    async def _receive(self) -> bytes | None:
        self.receiving = True
        self.progress_at = anyio.current_time()
        try:
            chunk = await self._stream.receive(READ_CHUNK)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return None
        finally:
            self.receiving = False
        self.progress_at = anyio.current_time()
        return chunk
