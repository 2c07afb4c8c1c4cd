"""The config's one error: ``ConfigError`` names the field (``commit_sensor.process_branches_duration``), says
where the bad value came from, and never quotes a secret.

It derives from ``LakeFSMirrorError`` (the package's root of expected failures) and from ``ValueError``, so code
that caught the ``ValueError`` it always was keeps working.
"""

from __future__ import annotations

import json
import re

from ..errors import LakeFSMirrorError

__all__ = ["ConfigError"]


class ConfigError(LakeFSMirrorError, ValueError):
    """One configuration problem; ``path`` is the dotted field path it concerns ("" when none applies)."""

    def __init__(self, problem: str, *, path: str = "", origin: str = "") -> None:
        self.problem = problem
        self.path = path
        self.origin = origin
        text = f"{path}: {problem}" if path else problem
        if origin:
            text += f" ({origin})"
        super().__init__(text)


_Parts = tuple[str | int, ...]


class _FieldError(ConfigError):
    """Raised while building: keeps the raw path so the loader can say where the value came from."""

    def __init__(self, parts: _Parts, problem: str) -> None:
        self.parts = parts
        super().__init__(problem, path=_dotted(parts))


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _dotted(parts: _Parts) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out
