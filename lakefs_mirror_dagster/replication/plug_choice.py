"""How a mirror's engine gets its transfer and validation plugs: chosen before the engine is built, by an
``EnginePlugs`` the service holds (the Spark wing's ``SparkPlugs``), from the mirror and the engine's own
in-process transfer, which a chosen transferer may fall back to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..mirrors import Mirror
from .in_process import InProcessTransferer
from .plugs import RangeTransferer, RangeValidator

__all__ = ["EnginePlugs", "Plugs"]


@dataclass(frozen=True)
class Plugs:
    """The transferer and validator chosen for one engine; each None: the engine's in-process one."""

    transferer: RangeTransferer | None = None
    validator: RangeValidator | None = None


class EnginePlugs(Protocol):
    """Chooses the plugs of ``mirror``'s engine; ``in_process`` is that engine's own transfer (its source,
    destination store and namespace, and the range reads its validation shares)."""

    def __call__(self, mirror: Mirror, in_process: InProcessTransferer) -> Plugs: ...
