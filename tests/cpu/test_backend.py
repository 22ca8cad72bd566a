import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import BackendError, BackendUnavailableError


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120
    )


def test_default_backend_is_numpy_and_names_come_from_numpy():
    assert xp.get_backend() == "numpy"
    a = xp.arange(5.0)
    assert type(a) is np.ndarray
    assert xp.sum(a) == 10.0
    assert xp.float64 is np.float64
    assert xp.numpy_backend and not xp.cupy_backend


def test_own_names_are_not_overwritten_by_the_backend():
    assert xp.__version__ == xp._core.__version__
    assert callable(xp.to_numpy)
    assert xp.cuda.__name__ == "cunumpy.cuda"


def test_unknown_backend_name_is_an_error():
    with pytest.raises(BackendError, match="'numpy' or 'cupy', got 'jax'"):
        xp.set_backend("jax")
    with pytest.raises(ValueError):
        xp.set_backend(3)  # type: ignore[arg-type]


def test_unknown_backend_in_environment_fails_import():
    result = run_python("import cunumpy", CUNUMPY_BACKEND="cuppy")
    assert result.returncode != 0
    assert "CUNUMPY_BACKEND must be 'numpy' or 'cupy', got 'cuppy'" in result.stderr


def test_environment_backend_is_case_insensitive():
    code = "import cunumpy as xp, warnings; print(xp.get_backend())"
    result = run_python(code, CUNUMPY_BACKEND=" NumPy ")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "numpy"


@pytest.mark.skipif(xp.cupy_available(), reason="checks the machine without a usable CuPy")
def test_requested_cupy_without_cupy_is_an_error_saying_what_is_missing():
    # 0.7.1 silently used NumPy; an explicit request for the GPU now fails (issue 21, item 4)
    reason = xp._backend.cupy_unavailable_reason()
    for request in (
        lambda: xp.set_backend("cupy"),
        lambda: xp.use_backend("cupy").__enter__(),
        lambda: xp.xp.array_backend.set("cupy"),
        lambda: xp.xp.ArrayBackend("cupy"),
    ):
        with pytest.raises(BackendUnavailableError) as e:
            request()
        text = str(e.value)
        assert "asks for the CuPy backend" in text and reason in text, text
        assert "CUNUMPY_FAKE_CUPY=1" in text and "strict=False" in text, text
        assert isinstance(e.value, RuntimeError)
        assert xp.get_backend() == "numpy"


@pytest.mark.skipif(xp.cupy_available(), reason="checks the machine without a usable CuPy")
def test_strict_false_is_the_explicit_fallback_and_warns_once():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert xp.set_backend("cupy", strict=False) == "numpy"
        assert xp.set_backend("cupy", strict=False) == "numpy"
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) <= 1  # once per process (an earlier test may have warned already)
    assert xp.get_backend() == "numpy"


@pytest.mark.skipif(xp.cupy_available(), reason="checks the machine without a usable CuPy")
def test_environment_cupy_without_cupy_fails_import_naming_the_variable():
    result = run_python("import cunumpy", CUNUMPY_BACKEND="cupy", CUNUMPY_FAKE_CUPY="0")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("cunumpy.exceptions.BackendUnavailableError: CUNUMPY_BACKEND='cupy'")
    assert "asks for the CuPy backend" in last


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"CUNUMPY_FAKE_CUPY": "1"}, "cupy fake"),
        ({"CUNUMPY_FAKE_CUPY": "1", "CUNUMPY_BACKEND": ""}, "cupy fake"),
        ({"CUNUMPY_FAKE_CUPY": "1", "CUNUMPY_BACKEND": "numpy"}, "numpy fake"),
        ({"CUNUMPY_FAKE_CUPY": "1", "CUNUMPY_BACKEND": "CuPy"}, "cupy fake"),
        ({"CUNUMPY_FAKE_CUPY": "0"}, "numpy none"),
    ],
)
def test_fake_cupy_alone_selects_the_emulated_device(env, expected):
    code = (
        "import sys, cunumpy as xp; c = sys.modules.get('cupy'); "
        "print(xp.get_backend(), 'fake' if getattr(c, '__cunumpy_fake__', False) else 'none')"
    )
    full = {"CUNUMPY_BACKEND": "", **env}
    result = run_python(code, **full)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


def test_use_backend_restores_on_exception():
    with pytest.raises(KeyError):
        with xp.use_backend("numpy"):
            raise KeyError("inside")
    assert xp.get_backend() == "numpy"


def test_backend_info_is_json_serialisable():
    info = xp.backend_info()
    text = json.dumps(info)
    assert json.loads(text)["backend"] == "numpy"
    assert info["versions"]["cunumpy"] == xp.__version__
    assert info["versions"]["numpy"] == np.__version__
    if not xp.cupy_available():
        assert info["cuda_unavailable_reason"]
        assert info["device"] is None


def test_cupy_version_rule():
    assert xp.cupy_version_supported("14.0.0")
    assert xp.cupy_version_supported("14.2.1")
    assert not xp.cupy_version_supported("14.0.0rc1")
    assert not xp.cupy_version_supported("13.6.0")


def test_device_helpers_are_neutral_on_numpy():
    with xp.use_backend("numpy"):
        assert xp.cuda.memory_info() is None
        with xp.cuda.stream() as s:
            assert s is None
        xp.cuda.set_device(0)
        with pytest.raises(ValueError, match="only device 0"):
            xp.cuda.set_device(1)
        xp.cuda.free_memory()
        xp.synchronize()
    if not xp.cupy_available():
        assert xp.cuda.device_count() == 0
