# Type stub of `cunumpy`: at run time the NumPy or CuPy names are filled in by the active
# backend; for editors and type checkers they are NumPy's, so `xp.<Tab>` completes them.
# Every name of `cunumpy.__all__` is declared below (tests/cpu/test_public_api.py checks).
from numpy import *  # noqa: F403

from . import algorithms as algorithms
from . import arguments as arguments
from . import cuda as cuda
from . import exceptions as exceptions
from . import integrate as integrate
from . import kernels as kernels
from . import memory as memory
from . import mpi as mpi
from . import optimize as optimize
from . import petsc as petsc
from . import profiling as profiling
from . import rng as rng
from . import xp as xp
from ._backend import MIN_CUPY_VERSION as MIN_CUPY_VERSION
from ._backend import backend_info as backend_info
from ._backend import cupy_available as cupy_available
from ._backend import cupy_version_supported as cupy_version_supported
from ._backend import get_backend as get_backend
from ._backend import set_backend as set_backend
from ._backend import use_backend as use_backend
from ._conversions import as_device_array as as_device_array
from ._conversions import assert_same_backend as assert_same_backend
from ._conversions import get_array_backend as get_array_backend
from ._conversions import get_array_module as get_array_module
from ._conversions import is_cpu as is_cpu
from ._conversions import is_gpu as is_gpu
from ._conversions import same_backend as same_backend
from ._conversions import synchronize as synchronize
from ._conversions import to_cunumpy as to_cunumpy
from ._conversions import to_cupy as to_cupy
from ._conversions import to_numpy as to_numpy
from ._host import evaluate_on_host as evaluate_on_host
from ._host import host_call as host_call
from ._host import setup_on_host as setup_on_host
from ._scipy import scipy as scipy
from ._staging import to_host_async as to_host_async
from ._toplevel import default_float_dtype as default_float_dtype
from ._toplevel import require_version as require_version
from .kernels import fuse as fuse

__version__: str
numpy_backend: bool
cupy_backend: bool
__all__: list[str]
