"""The cunumpy demo: which backend runs, a small computation, and what it copied.

Run with `make demo`; `CUNUMPY_BACKEND=cupy make demo` runs it on the GPU.
"""

import json

import cunumpy as xp
from cunumpy.profiling import count_transfers


def main() -> None:
    info = xp.backend_info()
    print(f"cunumpy {xp.__version__} on the {xp.get_backend()} backend")
    print(json.dumps({k: info[k] for k in ("backend", "cupy_available", "device")}, indent=2))
    if info["cuda_unavailable_reason"]:
        print(f"(CuPy unavailable: {info['cuda_unavailable_reason']})")

    with count_transfers() as counter:
        x = xp.to_cunumpy(xp.linspace(0.0, 1.0, 1_000_000))  # host data onto the backend
        energy = xp.sum(0.5 * x * x)
        result = xp.to_numpy(energy)  # the scalar back to the host
        xp.synchronize()
    print(f"energy = {float(result):.6f}")
    print("transfer report:")
    print(counter.report())


if __name__ == "__main__":
    main()
