"""Complex dtypes in `fuse` on the CPU executor: what is refused, with which error, and the
scalar/attribute spellings (the corpus, tests/fusion_corpus.py, checks the values)."""

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import FusionTypeError
from cunumpy.kernels import fuse

rng = np.random.default_rng(3)
Z = rng.standard_normal((4, 9)) + 1j * rng.standard_normal((4, 9))
F32 = rng.standard_normal(9).astype(np.float32)


@pytest.mark.parametrize(
    ("func", "op"),
    [
        (lambda z: z.any(), "any"),
        (lambda z: xp.all(z, axis=0), "all"),
        (lambda z: z.var(), "var"),
        (lambda z: xp.std(z, axis=1), "std"),
        (lambda z: xp.floor(z), "floor"),
        (lambda z: xp.clip(z, 0, 1j), "clip"),
        (lambda z: xp.sign(z), "sign"),
        (lambda z: xp.arctan2(z, 1j), "arctan2"),
        (lambda z: xp.i0(z), "i0"),
        (lambda z: z // 2, "floor_divide"),
        (lambda z: xp.where(z, 1.0, 0.0), "where"),
        (lambda z: z.astype(np.int32), "astype"),
        (lambda z: z.astype(np.float64), "astype"),
    ],
)
def test_unsupported_complex_operations_raise_a_typed_error_naming_the_op(func, op):
    with pytest.raises(FusionTypeError) as info:
        fuse(func, kernel_name="bad")(Z)
    msg = str(info.value)
    assert f"`{op}`" in msg and "complex128" in msg, msg
    assert isinstance(info.value, TypeError)


def test_astype_complex_to_real_says_how_to_keep_the_part_wanted():
    with pytest.raises(FusionTypeError, match=r"real\(x\), imag\(x\) or abs\(x\)"):
        fuse(lambda z: z.astype(np.float32))(Z)


def test_python_complex_scalar_is_weak_and_numpy_complex_scalar_is_strong():
    weak = fuse(lambda f, s: f * s)(F32, 2 - 1j)
    assert weak.dtype == np.complex64  # float32 array * Python complex -> complex64 (NEP 50)
    np.testing.assert_allclose(weak, F32 * (2 - 1j), rtol=1e-6)
    strong = fuse(lambda f, s: f * s)(F32, np.complex128(2 - 1j))
    assert strong.dtype == np.complex128
    np.testing.assert_allclose(strong, F32 * np.complex128(2 - 1j), rtol=1e-12)
    const = fuse(lambda f: f + 0.5j)(F32)
    assert const.dtype == np.complex64


def test_real_imag_conj_attributes_and_functions():
    f = fuse(lambda z: (z.real, z.imag, z.conj(), z.conjugate(), xp.real(z), xp.imag(z)))
    re, im, c1, c2, re2, im2 = f(Z)
    assert re.dtype == im.dtype == np.float64
    np.testing.assert_array_equal(re, Z.real)
    np.testing.assert_array_equal(im, Z.imag)
    np.testing.assert_array_equal(c1, np.conj(Z))
    np.testing.assert_array_equal(c2, np.conj(Z))
    np.testing.assert_array_equal(re2, Z.real)
    np.testing.assert_array_equal(im2, Z.imag)
    # of a real array: the array itself, and zeros
    r, i = fuse(lambda f: (f.real + 1, xp.imag(f)))(F32)
    assert i.dtype == np.float32 and not i.any()
    np.testing.assert_array_equal(r, F32 + 1)


def test_complex_results_into_out_arrays():
    out = np.empty_like(Z)
    r = fuse(lambda z: z * 1j)(Z, out=out)
    assert r is out
    np.testing.assert_array_equal(out, Z * 1j)
