"""Switching backends for a block, arrays staying where they were made."""

import cunumpy as xp

start = xp.get_backend()
with xp.use_backend("numpy"):
    a = xp.ones(3)
    print("inside", xp.get_backend())
print("after", xp.get_backend() == start, xp.get_array_backend(a))
b = xp.to_cunumpy(a)
print(xp.get_array_backend(b), xp.same_backend(a, b), xp.same_backend(a))
try:
    xp.assert_same_backend(a, b)
    print("same backends")
except TypeError as error:
    print("TypeError", "mismatched" in str(error))
try:
    xp.set_backend("gpu")
except ValueError:
    print("ValueError for 'gpu'")
print(xp.get_backend() == start)
