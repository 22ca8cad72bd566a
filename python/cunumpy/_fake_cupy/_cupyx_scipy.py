"""The fake ``cupyx.scipy``: SciPy's subpackages run on the host buffers of fake arrays.

Each subpackage (``cupyx.scipy.sparse``, ``.interpolate``, ...) forwards attribute access to
SciPy's module of the same name, imported on first use (SciPy is optional). Functions get the
NumPy data of fake arrays and give fake arrays back; NumPy arrays are refused as by the rest of
the fake (on a GPU they are a host/device mix-up). SciPy objects in results (sparse matrices,
splines, ...) come back wrapped, so their methods and operators follow the same rules and
``isinstance(A, cupyx.scipy.sparse.csr_matrix)`` holds.
"""

from __future__ import annotations

import functools
import importlib
import operator
from types import ModuleType
from typing import Any

import numpy as np

from ._ndarray import ndarray, unwrap, wrap

# The subpackages real CuPy has under cupyx.scipy that the fake forwards.
SUBMODULES = (
    "fft",
    "fftpack",
    "interpolate",
    "linalg",
    "ndimage",
    "signal",
    "sparse",
    "sparse.csgraph",
    "sparse.linalg",
    "spatial",
    "special",
    "stats",
)


def _scipy(path: str) -> ModuleType:
    try:
        return importlib.import_module(f"scipy.{path}")
    except ImportError as err:
        raise ImportError(
            f"the fake cupyx.scipy.{path} runs SciPy on the host and needs it: pip install scipy"
        ) from err


def _to_host(value: Any, where: str) -> Any:
    """The SciPy/NumPy form of an argument: fake arrays and wrapped objects unwrapped, inside
    tuples, lists and dicts too; host arrays refused."""
    if isinstance(value, DeviceObject):
        return value._obj
    if isinstance(value, dict):
        return {k: _to_host(v, where) for k, v in value.items()}
    if type(value) is tuple:
        return tuple(_to_host(v, where) for v in value)
    if isinstance(value, list):
        return [_to_host(v, where) for v in value]
    return unwrap(value, where)


def _to_device(value: Any) -> Any:
    """The fake-device form of a SciPy result: arrays as fake arrays, SciPy objects wrapped."""
    if isinstance(value, np.ndarray | np.generic):
        return wrap(value)
    if type(value) is tuple:
        return tuple(_to_device(v) for v in value)
    if isinstance(value, list):
        return [_to_device(v) for v in value]
    if type(value).__module__.startswith("scipy."):
        if callable(value) and not hasattr(value, "__dict__") and not hasattr(value, "shape"):
            return value
        return _proxy_class(type(value))._of(value)
    return value


def _forward(func: Any, where: str) -> Any:
    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        return _to_device(
            func(
                *[_to_host(a, where) for a in args],
                **{k: _to_host(v, where) for k, v in kwargs.items()},
            )
        )

    return call


class _ProxyType(type):
    """``isinstance(x, cupyx.scipy.sparse.spmatrix)`` asks about the wrapped SciPy object, so
    base classes work as they do on SciPy's (and CuPy's) objects."""

    def __instancecheck__(cls, obj: Any) -> bool:
        target = cls.__dict__.get("_cls")
        if target in (None, object) or not type.__instancecheck__(DeviceObject, obj):
            return type.__instancecheck__(cls, obj)
        return isinstance(obj._obj, target)


class DeviceObject(metaclass=_ProxyType):
    """A SciPy object living "on the fake device": attribute reads give fake arrays, methods
    and operators take and give fake arrays."""

    _cls: type = object
    _where: str = "cupyx.scipy"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._obj = self._cls(
            *[_to_host(a, self._where) for a in args],
            **{k: _to_host(v, self._where) for k, v in kwargs.items()},
        )

    @classmethod
    def _of(cls, obj: Any) -> DeviceObject:
        self = object.__new__(cls)
        self._obj = obj
        return self

    def __getattr__(self, name: str) -> Any:
        if name == "_obj":
            raise AttributeError(name)
        value = getattr(self._obj, name)
        if callable(value) and not isinstance(value, type):
            return _forward(value, f"{self._where}.{name}")
        return _to_device(value)

    def get(self) -> Any:
        """The host SciPy object (as ``cupyx.scipy.sparse`` matrices' ``get()``)."""
        return self._obj

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _forward(self._obj, self._where)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<fake device {self._obj!r}>"

    def __len__(self) -> int:
        return len(self._obj)

    def __getitem__(self, key: Any) -> Any:
        return _forward(operator.getitem, self._where)(self._obj, key)


def _operator(op: Any, reflected: bool = False) -> Any:
    def method(self: DeviceObject, other: Any) -> Any:
        if isinstance(other, np.ndarray) and other.ndim > 0:
            return NotImplemented
        a, b = self._obj, _to_host(other, self._where)
        return _to_device(op(b, a) if reflected else op(a, b))

    return method


for _name, _op in {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "matmul": operator.matmul,
    "truediv": operator.truediv,
    "pow": operator.pow,
}.items():
    setattr(DeviceObject, f"__{_name}__", _operator(_op))
    setattr(DeviceObject, f"__r{_name}__", _operator(_op, reflected=True))
DeviceObject.__neg__ = lambda self: _to_device(-self._obj)  # type: ignore[attr-defined]
# Fake arrays defer to the wrapped objects in operators (x @ A, 2.0 * A).
DeviceObject.__array_priority__ = 1000  # type: ignore[attr-defined]

_PROXIES: dict[type, type] = {}


def _proxy_class(cls: type, where: str | None = None) -> type:
    proxy = _PROXIES.get(cls)
    if proxy is None:
        proxy = type(
            cls.__name__,
            (DeviceObject,),
            {
                "_cls": cls,
                "_where": where or f"cupyx.scipy.{cls.__name__}",
                "__doc__": f"SciPy's {cls.__module__}.{cls.__name__} on fake device arrays.",
                "__module__": "cupyx.scipy",
            },
        )
        _PROXIES[cls] = proxy
    return proxy


def _submodule(path: str) -> ModuleType:
    name = f"cupyx.scipy.{path}"
    module = ModuleType(name, f"The fake {name}: scipy.{path} on the host buffers of fake arrays.")
    cache: dict[str, Any] = {}

    def __getattr__(attr: str) -> Any:  # noqa: N807 - module __getattr__
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr in cache:
            return cache[attr]
        source = _scipy(path)
        try:
            value = getattr(source, attr)
        except AttributeError:
            raise AttributeError(
                f"the fake {name} has no attribute {attr!r} (SciPy's scipy.{path} has none)"
            ) from None
        if isinstance(value, ModuleType):
            raise AttributeError(f"the fake {name} does not forward the module {attr!r}")
        if isinstance(value, type):
            value = _proxy_class(value, f"{name}.{attr}")
        elif callable(value):
            value = _forward(value, f"{name}.{attr}")
        cache[attr] = value
        return value

    module.__getattr__ = __getattr__  # type: ignore[attr-defined]
    module.__cunumpy_fake__ = True  # type: ignore[attr-defined]
    return module


def build(scipy: ModuleType) -> dict[str, ModuleType]:
    """The ``cupyx.scipy.*`` modules, attached to the fake ``cupyx.scipy`` module `scipy`."""
    modules = {f"cupyx.scipy.{path}": _submodule(path) for path in SUBMODULES}
    for path in SUBMODULES:
        parent_name, _, leaf = f"cupyx.scipy.{path}".rpartition(".")
        parent = scipy if parent_name == "cupyx.scipy" else modules[parent_name]
        setattr(parent, leaf, modules[f"cupyx.scipy.{path}"])
    return modules


def is_device_object(value: Any) -> bool:
    """Whether `value` is a SciPy object wrapped by the fake cupyx.scipy."""
    return isinstance(value, DeviceObject)


__all__ = ["SUBMODULES", "build", "is_device_object", "ndarray"]
