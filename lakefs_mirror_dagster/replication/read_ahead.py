"""Reading a range file from the source while the pass works on something else.

A one-object commit in the middle of a large repository makes lakeFS rewrite a range of ~50,000 entries (~8 MB).
Reading it from the source takes about as long as asking the destination whether the commit's other ranges are
still intact, and the next range of a batch can be on its way while the one before it is hashed and copied.
``RangeReadAhead`` starts such reads on threads of their own and hands their bytes to ``transfer_range`` as a
``RangeSource``; a read nobody started is made when asked for. At most ``limit`` reads are held at once, so a
pass never holds more than that many range files it has not started working on.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future

from ..storage import Blockstore
from .aside import aside
from .range_transfer import RangeSource

__all__ = ["RangeReadAhead"]


class RangeReadAhead:
    """A ``RangeSource`` whose range files may have been read ahead (``start``). Thread-safe."""

    def __init__(self, source: RangeSource, *, limit: int = 2) -> None:
        self.source = source
        self.limit = limit
        self._lock = threading.Lock()
        self._pending: dict[str, Future[bytes]] = {}

    def start(self, range_id: str) -> bool:
        """Start reading ``range_id`` unless it is on its way or ``limit`` reads are held; whether it started."""
        with self._lock:
            if range_id in self._pending or len(self._pending) >= self.limit:
                return False
            self._pending[range_id] = aside(
                lambda: self.source.read_metadata("range", range_id), name="range-read-ahead"
            )
        return True

    def hold(self, range_id: str, data: bytes) -> None:
        """Hand ``data``, the range file read already, to the next ``read_metadata`` of ``range_id``."""
        done: Future[bytes] = Future()
        done.set_result(data)
        with self._lock:
            self._pending[range_id] = done

    def read_metadata(self, kind: str, file_id: str) -> bytes:
        """The bytes a read ahead got (or its error, raised as the read would have raised it), else a read now."""
        with self._lock:
            future = self._pending.pop(file_id, None) if kind == "range" else None
        if future is None:
            return self.source.read_metadata(kind, file_id)
        return future.result()

    def object_location(self, commit_id: str, key: str, address: str) -> tuple[Blockstore, str]:
        return self.source.object_location(commit_id, key, address)

    def discard(self) -> None:
        """Drop reads nobody asked for (a batch that ended early): their bytes are not held."""
        with self._lock:
            self._pending.clear()
