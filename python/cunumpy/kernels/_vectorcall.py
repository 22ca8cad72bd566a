"""Vectorcall for the kernel classes and for their users' subclasses (vectorcall.rs)."""

from __future__ import annotations

from typing import Any, TypeVar

from .. import _core

T = TypeVar("T", bound=type)


def use_vectorcall(cls: T) -> T:
    """Class decorator: calls of the instances of ``cls`` and of every subclass of it hand the
    interpreter's argument array to Rust instead of building a tuple and a keyword dict.

    Before Python 3.12 a subclass does not inherit vectorcall, so each new subclass is enabled
    as it is created; one that defines its own ``__call__`` keeps it.
    """
    _core._enable_vectorcall(cls)

    def enable_for_subclass(sub: type, **kwargs: Any) -> None:
        super(cls, sub).__init_subclass__(**kwargs)
        _core._enable_vectorcall(sub)

    cls.__init_subclass__ = classmethod(enable_for_subclass)  # type: ignore[assignment]
    return cls
