"""Indexing a traced value in ``fuse``: basic indices (slices with any step, integers,
``None``/``newaxis``, ``...``) become views the planner turns into index maps of the loop
that reads them; one integer array in the index (``a[idx]``, ``a[:, idx]``) becomes a
gather. Kept apart from ``_fusion`` so that the tracer only calls :func:`getitem`."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

__all__ = ["getitem"]


def _int(x: Any, what: str, unsupported: Any) -> int | None:
    if x is None:
        return None
    try:
        return operator.index(x)
    except TypeError:
        raise unsupported(f"a slice {what} of type {type(x).__name__} (only Python ints)") from None


def _item(x: Any, unsupported: Any) -> tuple[str, int | None, int | None, int]:
    """One basic item as the graph builder takes it."""
    if x is None:
        return ("newaxis", None, None, 0)
    if x is Ellipsis:
        return ("ellipsis", None, None, 0)
    if isinstance(x, slice):
        step = _int(x.step, "step", unsupported)
        return (
            "slice",
            _int(x.start, "start", unsupported),
            _int(x.stop, "stop", unsupported),
            1 if step is None else step,
        )
    if isinstance(x, (bool, np.bool_)):
        raise unsupported("indexing with a boolean (the result's shape depends on the data)")
    if isinstance(x, (int, np.integer)):
        return ("int", int(x), None, 0)
    raise unsupported(f"an index of type {type(x).__name__}")


def getitem(tracer: Any, value: Any, key: Any, symbol_type: type, unsupported: Any) -> Any:
    """``value[key]`` on the traced ``value``: the graph id of the result. ``unsupported``
    makes the error for constructs that stay unsupported (boolean masks, several index
    arrays, an index array apart from the integers of the key)."""
    items = list(key) if isinstance(key, tuple) else [key]
    arrays = [i for i, x in enumerate(items) if isinstance(x, symbol_type)]
    for x in items:
        if isinstance(x, (list, np.ndarray)):
            raise unsupported(
                "indexing with a list or a NumPy array (pass the index array as an argument)"
            )
    if not arrays:
        return tracer.call("index", value._id, [_item(x, unsupported) for x in items])
    if len(arrays) > 1:
        raise unsupported("indexing with more than one index array")
    pos = arrays[0]
    index = items[pos]
    if index.dtype.kind == "b":
        raise unsupported("indexing with a boolean mask (the result's shape depends on the data)")
    if index.dtype.kind not in "iu":
        raise unsupported(f"indexing with an array of dtype {index.dtype}")
    # NumPy keeps the gathered dims in place only when the integers of the key sit next to
    # the index array (with no slice, None or ... between); otherwise they go first
    lo = hi = pos
    while lo > 0 and isinstance(items[lo - 1], (int, np.integer)):
        lo -= 1
    while hi + 1 < len(items) and isinstance(items[hi + 1], (int, np.integer)):
        hi += 1
    if any(isinstance(x, (int, np.integer)) for x in items[:lo] + items[hi + 1 :]):
        raise unsupported("an index array with integers apart from it in the index")
    basic = [_item(x, unsupported) for x in items[:pos]]
    basic.append(("slice", None, None, 1))
    basic.extend(_item(x, unsupported) for x in items[pos + 1 :])
    viewed = tracer.call("index", value._id, basic)
    # the gathered axis: the dims of the view before the array's place (slices and new axes
    # before it; an `...` before it stands for the dims the other items leave)
    if any(x is Ellipsis for x in items[:pos]):
        after = sum(1 for x in items[pos + 1 :] if isinstance(x, slice) or x is None)
        axis = tracer.builder.info(viewed)[1] - 1 - after
    else:
        axis = sum(1 for x in items[:pos] if isinstance(x, slice) or x is None)
    return tracer.call("gather", viewed, index._id, axis)
