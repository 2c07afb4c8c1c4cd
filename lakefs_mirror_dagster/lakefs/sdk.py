"""``lakefs_sdk``, imported so that each API method's argument checks are built when it is first called.

The generated SDK wraps each of its ~300 API methods in pydantic's ``validate_arguments``, which builds a model of
the method's arguments at import: 0.28 s of the SDK's 0.49 s import on an idle core (over a second on a loaded
2-core machine). Every short-lived ``sync``, CLI command and Dagster run that is not forked pays it before its
first request, and calls about twenty of those methods. Through ``import_sdk`` the same checks are built on each
method's first call instead.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["import_sdk"]

_LOCK = threading.Lock()


def import_sdk() -> ModuleType:
    """The ``lakefs_sdk`` module (imported here, lazily checked, unless something imported it before)."""
    with _LOCK:
        if "lakefs_sdk" not in sys.modules:
            pydantic_v1: ModuleType | None
            try:
                import pydantic.v1 as pydantic_v1
            except ImportError:  # pydantic 1: the SDK uses it as it is
                pydantic_v1 = None
            if pydantic_v1 is not None:
                eager = pydantic_v1.validate_arguments
                setattr(pydantic_v1, "validate_arguments", _on_first_call(eager))  # noqa: B010 (mypy: a function)
                try:
                    import lakefs_sdk
                finally:
                    setattr(pydantic_v1, "validate_arguments", eager)  # noqa: B010
        import lakefs_sdk

        return lakefs_sdk


def _on_first_call(eager: Callable[..., Any]) -> Callable[..., Any]:
    """A ``validate_arguments`` that defers ``eager`` (pydantic's) to the decorated function's first call."""

    def validate_arguments(func: Callable[..., Any] | None = None, *, config: Any = None) -> Any:
        def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
            checked: Callable[..., Any] | None = None

            @functools.wraps(function)
            def call(*args: Any, **kwargs: Any) -> Any:
                nonlocal checked
                if checked is None:  # threads racing here build equal wrappers
                    checked = eager(function) if config is None else eager(function, config=config)
                return checked(*args, **kwargs)

            return call

        return decorate if func is None else decorate(func)

    return validate_arguments
