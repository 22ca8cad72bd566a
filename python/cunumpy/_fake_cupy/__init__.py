"""The emulated device backend: a CuPy stand-in backed by host memory, strict like a GPU.

:func:`install` puts a synthetic ``cupy`` module (with ``cupy.cuda``, ``cupy.linalg``,
``cupy.fft``, ``cupy.random``, ``cupy.testing``) and ``cupyx`` into ``sys.modules``. Its arrays
are not NumPy arrays and refuse implicit conversion; module functions refuse NumPy arrays;
copies to and from it are real copies. ``array_api_compat.cupy`` imports on top of it
unchanged, so cunumpy's CuPy backend *is* array_api_compat over the fake, as over the real
CuPy. While it is installed, ``CudaKernel`` launches run in the CPU emulator (same checks, same
packed argument buffer as on a GPU).
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import numpy as np

from .. import _core
from . import _cupyx_scipy, _functions, _runtime
from ._ndarray import ndarray

VERSION = "0.0.0+cunumpy-fake"


def _module(name: str, doc: str, **attrs: Any) -> ModuleType:
    module = ModuleType(name, doc)
    module.__dict__.update(attrs)
    module.__cunumpy_fake__ = True  # type: ignore[attr-defined]
    return module


def _numpy_submodule(name: str, source: Any) -> ModuleType:
    names: dict[str, Any] = {}
    _functions.wrap_namespace(source, names, prefix=name.removeprefix("cupy.") + ".")
    module = _module(
        name, f"The cunumpy fake of {name} (NumPy's {source.__name__} on fake arrays)."
    )
    module.__dict__.update(names)
    module.__all__ = sorted(names)  # type: ignore[attr-defined]
    return module


def _build() -> dict[str, ModuleType]:
    names: dict[str, Any] = {}
    _functions.wrap_namespace(np, names)
    for name in (
        "array",
        "asarray",
        "asanyarray",
        "ascontiguousarray",
        "asfortranarray",
        "asnumpy",
        "get_array_module",
        "fuse",
        "RawKernel",
        "RawModule",
        "ElementwiseKernel",
        "ReductionKernel",
    ):
        names[name] = getattr(_functions, name)
    device_module = _module("cupy.cuda.device", "Device of the fake CuPy.", Device=_runtime.Device)
    stream_module = _module(
        "cupy.cuda.stream",
        "Streams of the fake CuPy.",
        Stream=_runtime.Stream,
        ExternalStream=_runtime.ExternalStream,
        get_current_stream=_runtime.get_current_stream,
    )
    cuda = _module(
        "cupy.cuda",
        "The fake cupy.cuda: one device, synchronous streams and events.",
        Device=_runtime.Device,
        Stream=_runtime.Stream,
        ExternalStream=_runtime.ExternalStream,
        Event=_runtime.Event,
        get_current_stream=_runtime.get_current_stream,
        get_elapsed_time=_runtime.get_elapsed_time,
        runtime=_runtime.runtime,
        driver=_runtime.driver,
        nvtx=_runtime.nvtx,
        device=device_module,
        stream=stream_module,
        MemoryPool=_runtime.MemoryPool,
        PinnedMemoryPool=_runtime.PinnedMemoryPool,
        alloc_pinned_memory=_runtime.alloc_pinned_memory,
        is_available=lambda: True,
    )
    random = _numpy_submodule("cupy.random", np.random)
    random.default_rng = _functions.default_rng  # type: ignore[attr-defined]
    random.Generator = _functions.Generator  # type: ignore[attr-defined]
    random.RandomState = _functions.RandomState  # type: ignore[attr-defined]
    random.get_random_state = _functions.get_random_state  # type: ignore[attr-defined]
    testing = _module(
        "cupy.testing", "NumPy's assertions on fake arrays.", **_functions.testing_namespace()
    )
    linalg = _numpy_submodule("cupy.linalg", np.linalg)
    fft = _numpy_submodule("cupy.fft", np.fft)
    names.update(
        ndarray=ndarray,
        ufunc=_functions.ufunc,
        cuda=cuda,
        linalg=linalg,
        fft=fft,
        random=random,
        testing=testing,
        is_available=lambda: True,
        get_default_memory_pool=lambda: _runtime._memory_pool,
        get_default_pinned_memory_pool=lambda: _runtime._pinned_pool,
        show_config=lambda: print(f"CuPy {VERSION}: the cunumpy fake (host memory)"),
    )
    public = sorted(n for n in names if not n.startswith("_"))
    cupy = _module("cupy", "cunumpy's fake CuPy: device arrays in host memory.", **names)
    cupy.__version__ = VERSION  # type: ignore[attr-defined]
    # Real CuPy has no __all__, so `from cupy import *` (array_api_compat.cupy does it) also
    # brings the submodules: `xp.random`, `xp.cuda`... on the CuPy backend.
    cupy.__all__ = public  # type: ignore[attr-defined]
    scipy = _module(
        "cupyx.scipy", "The fake cupyx.scipy: SciPy on the host buffers of fake arrays."
    )
    scipy_modules = _cupyx_scipy.build(scipy)
    cupyx = _module(
        "cupyx",
        "The fake cupyx: pinned host arrays are NumPy arrays.",
        scipy=scipy,
        empty_pinned=np.empty,
        zeros_pinned=np.zeros,
        empty_like_pinned=np.empty_like,
        zeros_like_pinned=np.zeros_like,
    )
    return {
        "cupy": cupy,
        "cupy.cuda": cuda,
        "cupy.cuda.device": device_module,
        "cupy.cuda.stream": stream_module,
        "cupy.cuda.runtime": _module(
            "cupy.cuda.runtime",
            "runtime",
            **{
                n: getattr(_runtime.runtime, n)
                for n in dir(_runtime.runtime)
                if not n.startswith("_")
            },
        ),
        "cupy.cuda.driver": _module(
            "cupy.cuda.driver",
            "driver",
            **{
                n: getattr(_runtime.driver, n)
                for n in dir(_runtime.driver)
                if not n.startswith("_")
            },
        ),
        "cupy.cuda.nvtx": _module(
            "cupy.cuda.nvtx",
            "nvtx",
            RangePush=_runtime.nvtx.RangePush,
            RangePop=_runtime.nvtx.RangePop,
            Mark=_runtime.nvtx.Mark,
            available=True,
        ),
        "cupy.linalg": linalg,
        "cupy.fft": fft,
        "cupy.random": random,
        "cupy.testing": testing,
        "cupyx": cupyx,
        "cupyx.scipy": scipy,
        **scipy_modules,
    }


def is_active() -> bool:
    """Whether the fake CuPy is the ``cupy`` in ``sys.modules``."""
    return bool(getattr(sys.modules.get("cupy"), "__cunumpy_fake__", False))


def _forget_compat() -> None:
    for name in [
        n
        for n in sys.modules
        if n == "array_api_compat.cupy" or n.startswith("array_api_compat.cupy.")
    ]:
        del sys.modules[name]


def install() -> ModuleType:
    """Installs the fake CuPy (again: harmless), switches the emulated device on and returns
    the module.

    Raises ``RuntimeError`` when the real CuPy is already imported. The backend switch
    (``cunumpy._backend.install_fake_cupy``) also forgets an earlier CuPy probe; call that.
    """
    existing = sys.modules.get("cupy")
    if existing is not None:
        if getattr(existing, "__cunumpy_fake__", False):
            _core._set_fake_backend(True)
            return existing
        raise RuntimeError(
            "the real CuPy is already imported; the fake CuPy must be installed before it "
            "(set CUNUMPY_FAKE_CUPY=1 before importing cunumpy)"
        )
    _forget_compat()
    sys.modules.update(_build())
    _core._set_fake_backend(True)
    return sys.modules["cupy"]


def uninstall() -> None:
    """Removes the fake (``cupy*``, ``cupyx*``, ``array_api_compat.cupy*``) and switches the
    emulated device off. The backend switch (``cunumpy._backend.uninstall_fake_cupy``) first
    moves a CuPy backend back to NumPy; call that."""
    if not is_active():
        return
    for name in [n for n in sys.modules if n.split(".")[0] in {"cupy", "cupyx"}]:
        del sys.modules[name]
    _forget_compat()
    _core._set_fake_backend(False)


__all__ = ["VERSION", "install", "is_active", "ndarray", "uninstall"]
