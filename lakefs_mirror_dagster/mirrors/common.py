"""What every mirrors database store does the same way on top of its own ``list_mirrors`` and ``close``."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from types import TracebackType
from typing import Any, Self

from .inputs import DEFAULT_PAGE_SIZE
from .models import Mirror, MirrorPage, MirrorState

__all__ = ["StoreCommon"]


class StoreCommon:
    """Iteration over every page, and use as a context manager that closes the store."""

    def list_mirrors(
        self,
        *,
        source_repository: str | None = None,
        destination_region: str | None = None,
        states: Collection[MirrorState | str] | None = None,
        organization_id: str | None = None,
        source_region: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        after: str | None = None,
    ) -> MirrorPage:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def iter_mirrors(self, *, page_size: int = DEFAULT_PAGE_SIZE, **filters: Any) -> Iterator[Mirror]:
        """Every mirror matching ``list_mirrors`` filters, fetched page by page."""
        after: str | None = None
        while True:
            page = self.list_mirrors(page_size=page_size, after=after, **filters)
            yield from page.mirrors
            if page.next_after is None:
                return
            after = page.next_after

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
