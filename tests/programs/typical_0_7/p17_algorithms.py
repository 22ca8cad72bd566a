"""Particle-code building blocks: Morton keys, sort by cell, segment sums, compaction."""

import numpy as np

import cunumpy as xp
from cunumpy import algorithms as alg

ix = xp.asarray(np.array([3, 0, 2, 1, 0], dtype=np.int64))
iy = xp.asarray(np.array([1, 0, 2, 3, 1], dtype=np.int64))
keys = alg.morton_encode(ix, iy)
print(xp.to_numpy(keys).tolist(), [xp.to_numpy(c).tolist() for c in alg.morton_decode(keys, 2)])
cells = xp.asarray(np.array([2, 0, 1, 2, 0, 1, 1], dtype=np.int64))
w = xp.asarray(np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]))
result = alg.sort_by_key(cells, w)
print([xp.to_numpy(r).tolist() for r in result])
sorted_cells = xp.sort(cells)
print(xp.to_numpy(alg.cell_offsets(sorted_cells, 3)).tolist())
print(xp.to_numpy(alg.segment_sum(w, cells, 3)).tolist())
mask = xp.asarray(np.array([True, False, True, True, False, False, True]))
kept = alg.compact_by_mask(mask, w)
print(kept, xp.to_numpy(w[:kept]).tolist())
