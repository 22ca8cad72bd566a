"""Summarises `scripts/gpu-compare` output: the median of each build's runs per metric, the new
build against the base, and whether it holds (within 3%, or within the spread of the base runs
where that is wider). Prints JSON; `--write FILE` also stores it.

usage: python3 scripts/compare_benches.py OUT_DIR [--write benches/results/FILE.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

# metric name -> (benchmark, path into its JSON, True when higher is better)
METRICS = {
    "launch: cunumpy µs per launch": ("launch_overhead", ["cunumpy_us"], False),
    "launch: vs CuPy RawKernel": ("launch_overhead", ["ratio_vs_cupy_rawkernel"], False),
    "launch: vs driver floor": ("launch_overhead", ["ratio_vs_floor"], False),
    "fusion: cached fused call µs": ("fusion", ["call_costs", "fused_elementwise_call_us"], False),
    "fusion: fused call vs CudaKernel launch": (
        "fusion",
        ["call_costs", "fused_overhead_vs_cuda_kernel"],
        False,
    ),
    "fusion: first call of a new function s": (
        "fusion",
        ["call_costs", "first_call_new_function_s"],
        False,
    ),
}
for expr in ("a*b + c*d - 2.5*a", "exp(-a*a)*sin(b) + c", "sum((a-b)**2)", "a - mean(a)"):
    METRICS[f"fusion GB/s: {expr}"] = ("fusion", ["expressions", expr, "cunumpy_fuse"], True)
    METRICS[f"fusion vs copy: {expr}"] = ("fusion", ["expressions", expr, "ratio_vs_copy"], True)


def values(out: Path, which: str, bench: str, path: list[str]) -> list[float]:
    found = []
    for file in sorted(out.glob(f"{which}-{bench}-*.json")):
        try:
            node = json.loads(file.read_text())
            for key in path:
                node = node[key]
        except (ValueError, KeyError, TypeError):
            continue
        if isinstance(node, (int, float)):
            found.append(float(node))
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--write", type=Path)
    opts = parser.parse_args()
    rows, holds = {}, True
    for name, (bench, path, higher_better) in METRICS.items():
        base, new = values(opts.out, "base", bench, path), values(opts.out, "new", bench, path)
        if not base or not new:
            rows[name] = {"missing": {"base": len(base), "new": len(new)}}
            holds = False
            continue
        b, n = statistics.median(base), statistics.median(new)
        loss = (b - n) / b if higher_better else (n - b) / b  # > 0: the new build is worse
        spread = (max(base) - min(base)) / b
        ok = loss <= max(0.03, spread)
        holds &= ok
        rows[name] = {
            "base_median": b,
            "new_median": n,
            "new_vs_base": n / b,
            "loss": round(loss, 4),
            "base_spread": round(spread, 4),
            "holds": ok,
            "base_runs": base,
            "new_runs": new,
        }
    report = {"rule": "loss <= max(3%, spread of base runs)", "holds": holds, "metrics": rows}
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if opts.write:
        opts.write.write_text(text + "\n")
    return 0 if holds else 1


if __name__ == "__main__":
    raise SystemExit(main())
