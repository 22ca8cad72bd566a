"""How many hand-ported kernels of an installed package the translator accepts.

    python scripts/port_harness.py SITE_PACKAGES/struphy [more package paths]

For every ``<name>_cuda.cu`` under the paths whose folder holds the host kernel
``<name>_kernels.py`` (the layout of ``KernelCatalog.from_package``), or a module ``<name>.py``
next to it, translates ``<name>`` from the module's source (nothing is imported) and prints JSON:
how many were accepted, and for the others the refusal (construct, line, message), counted by
construct. Parity of the accepted ones needs the package's own test arguments (a later step).
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

from cunumpy.exceptions import CudaPortError
from cunumpy.kernels._generate import translate_source


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="+", type=Path)
    opts = parser.parse_args()
    kernels = []
    for root in opts.paths:
        for cu in sorted(root.rglob("*_cuda.cu")):
            name = cu.name[: -len("_cuda.cu")]
            host = next(
                (
                    p
                    for p in (cu.with_name(f"{name}_kernels.py"), cu.with_name(f"{name}.py"))
                    if p.is_file()
                ),
                None,
            )
            kernels.append((name, cu, host))
    search = [p.resolve().parent for p in opts.paths]
    results = []
    for name, cu, host in kernels:
        entry = {"kernel": name, "cuda": str(cu)}
        if host is None:
            entry.update(
                accepted=False,
                construct="no host module",
                message="no <name>_kernels.py next to it",
            )
        else:
            entry["host"] = str(host)
            try:
                # Struct classes named in annotations (``args: "DomainArguments"``) are read
                # from the package's files (``from struphy.x import C``), never imported.
                out = translate_source(host.read_text(), name, search_paths=search)
                entry.update(accepted=True, loop_line=out.loop_line, atomics=list(out.atomics))
            except CudaPortError as exc:
                entry.update(
                    accepted=False,
                    construct=getattr(exc, "construct", "?"),
                    line=getattr(exc, "line", 0),
                    message=str(exc),
                )
        results.append(entry)
    refused = collections.Counter(r["construct"] for r in results if not r["accepted"])
    print(
        json.dumps(
            {
                "kernels": len(results),
                "accepted": sum(r["accepted"] for r in results),
                "refused_by_construct": dict(refused.most_common()),
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
