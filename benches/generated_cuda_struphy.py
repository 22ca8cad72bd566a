"""Generated vs hand-written CUDA on struphy's and feectools' own kernels: for every case of
``scripts/port_parity.py`` (its ``CASES``, read at run time, so new cases count at once), the
hand-written ``<name>_cuda.cu`` that the package ships (loaded as the package loads it: its
folder's ``Kernel.from_folder``) and the kernel ``translate_source`` writes from the host kernel
``<name>_kernels.py``, on the same data, in one process, interleaved.

    python benches/generated_cuda_struphy.py SITE [--device gpu|emulated] [--rounds 5] [--n N]
                                             [--isolate] [--only LABEL ...]

SITE is a folder where struphy 3.5.0 and feectools 0.10.0 are installed (``pip install
--no-deps struphy==3.5.0 feectools==0.10.0 --target SITE``; nothing of them is in this
repository). For each case:

1. at the parity sizes of ``port_parity`` (90 markers, a 4 x 3 x 5 grid, ...) the host kernel,
   the hand-written and the generated kernel each run once from the same inputs, and both CUDA
   versions must agree with the host kernel;
2. at about ``--n`` markers, evaluation points or grid points (``port_parity.sized``) both CUDA
   versions run once from the same inputs and must agree with each other;
3. then each is timed ``--reps`` launches per round with CUDA events, interleaved, for
   ``--rounds`` rounds (without ``--reps``: on the GPU as many launches, up to ``REPS_CAP``,
   as take about 20 ms on the slower side, so a slow case costs no more time than a fast one;
   on the emulated device one); ``hand_ms`` and ``generated_ms`` are the medians per launch and
   ``ratio`` = hand_ms / generated_ms (>= 1: the generated kernel is as fast). On the GPU the
   launches are queued behind a spin kernel (``queued_ms``), so the events time the kernels and
   not the host's work to launch them (the hand-written kernels take struphy's argument
   structs, whose launch costs the host about as long as the kernel runs); the plain events'
   time and the host's time per launch are kept beside it (``*_wall_ms``, ``*_host_ms``).

Each side gets its arguments as its kernel expects them, from the same NumPy data: the case's
maker builds the host arguments (struphy's Pyccel argument classes, which allocate the spline
scratch) and the generated kernel's (the translator's own structs, without scratch); the
hand-written kernel gets struphy's CUDA argument classes (``CudaMarkerArguments``, ... from
``kernel_arguments/*_cuda.py``) built from the host objects' attributes. Its launch size is what
struphy's call sites pass (one thread per marker for a kernel taking ``MarkerArguments``, one per
output element or grid point for the evaluation kernels) or the kernel folder's own
``n_threads_from`` (feectools); a case whose hand-written kernel is missing, has no known launch
size or cannot take the inputs (or that the translator refuses) is skipped, with the reason.
Prints JSON; exits 1 when a case disagrees or breaks. ``--device emulated`` runs the same on
the emulated device (no GPU; a small ``--n``).

``--variant NAME=OPTIONS`` (repeatable; options apart by spaces or commas) also compiles the
generated source with those NVRTC options (``-DCUNUMPY_PORT_LOCAL_CAP=16``,
``--maxrregcount=96``; ``--block=64`` and ``--max-registers=112`` set those ``CudaKernel``
parameters instead) and times it in the same rounds, checked against the hand-written kernel
like the default build: each case's ``variants`` holds its times and ratio, and the table a
column each. ``--tune`` (alone) times ``GeneratedCuda.tuned_kernel``'s choice among its
candidate builds, made on data of the bench's size (another seed than the timed data). An option
``--source=DIR`` is not passed to NVRTC: where DIR holds ``<kernel>.cu`` (an edited copy of the
generated source, same kernel and arguments), the variant compiles that instead, so a change to
the translator can be measured before it is made. ``--warm-jobs N`` (with ``--isolate``) first
runs every case once in N processes at a time, untimed, so that NVRTC's compiles fill the kernel
cache in parallel and the timed pass, one case at a time, only loads them (within a case every
build compiles at once too); ``--warm-only`` stops after that, for a warm-up run ahead of
separate timed runs.

    python benches/generated_cuda_struphy.py --table RUN1.json RUN2.json ...

prints the Markdown table of several runs (per kernel the median over the runs of each run's
median) for ``benches/results/``.

The host kernels import ``pyccel.decorators`` (``pure``, ``stack_array``, ...: functions that
return the kernel unchanged when it runs as Python); where pyccel is not installed (the GPU
machine) the bench puts a module of such identity decorators in its place.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import inspect
import json
import math
import statistics
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from gpu_timing import queued_ms, timed_ms

ROOT = Path(__file__).resolve().parents[1]

#: Launch sizes of struphy's hand-written kernels, as struphy's call sites pass them
#: (``geometry/base.py``, ``feec/psydac_derham.py``); a kernel taking ``MarkerArguments`` gets
#: one thread per marker (``pic/pushing/pusher.py``, ``kernel_setup.py``,
#: ``pic/accumulation/particles_to_grid.py``) without an entry here.
HAND_LAUNCH: dict[str, Callable[[tuple[Any, ...]], int]] = {
    "eval_spline_mpi_tensor_product_fixed": lambda a: a[-1].size,
    "eval_spline_mpi_markers": lambda a: a[-1].size,
    "eval_spline_mpi_matrix": lambda a: a[-1].size,
    "eval_spline_mpi_sparse_meshgrid": lambda a: a[-1].size,
    "kernel_evaluate": lambda a: math.prod(a[5].shape[:3]),
    "kernel_pullpush": lambda a: math.prod(a[-1].shape[:3]),
    "kernel_evaluate_pic": lambda a: a[0].shape[1],  # markers: one thread per marker
    "kernel_pullpush_pic": lambda a: a[1].shape[1],
    "reflect": lambda a: len(a[2]),  # outside_inds (pic/base.py)
}


class Skip(Exception):
    """A case that cannot be compared, with the reason."""


def pyccel_decorators_in_place() -> bool:
    """Where pyccel is not installed, a ``pyccel.decorators`` whose decorators return the
    function unchanged, as pyccel's own do in Python (``@pure``, ``@stack_array("a", "b")``);
    returns whether it was needed."""
    try:
        import pyccel.decorators  # noqa: F401
    except ImportError:
        pass
    else:
        return False

    def identity(f: Any) -> Any:
        return f

    def with_names(*names: Any) -> Callable[[Any], Any]:
        return identity

    package = types.ModuleType("pyccel")
    package.__path__ = []
    decorators = types.ModuleType("pyccel.decorators")
    for name in ("pure", "elemental", "inline", "private", "bypass", "sympy"):
        setattr(decorators, name, identity)
    for name in ("stack_array", "allow_negative_index", "types"):
        setattr(decorators, name, with_names)
    package.decorators = decorators
    sys.modules["pyccel"], sys.modules["pyccel.decorators"] = package, decorators
    return True


def load_port_parity() -> Any:
    spec = importlib.util.spec_from_file_location(
        "port_parity", ROOT / "scripts" / "port_parity.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["port_parity"] = module
    spec.loader.exec_module(module)
    return module


def to_host(a: Any) -> np.ndarray:
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def is_array(a: Any) -> bool:
    return isinstance(a, np.ndarray) or hasattr(a, "__cuda_array_interface__")


def fields_of(value: Any) -> dict[str, Any] | None:
    """The arrays of a struct-like argument by field: a packed struct value (the generated
    kernel's), a ``CudaStructArguments`` or a Pyccel argument class; ``None`` for others."""
    values = getattr(value, "values", None)
    if hasattr(value, "__cuda_struct__") and isinstance(values, dict):
        return {k: v for k, v in values.items() if is_array(v)}
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return {k: v for k, v in vars(value).items() if not k.startswith("_") and is_array(v)}
    return None


def selected(params: list[str], outputs: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    """The output arrays of a call by label (``name`` or ``name.field``): ``outputs`` are
    parameter names, ``name.field`` or indices (``None``: every argument)."""
    entries = list(range(len(args))) if outputs is None else list(outputs)
    found: dict[str, Any] = {}
    for entry in entries:
        field = None
        if isinstance(entry, str):
            entry, _, field = entry.partition(".")
            index = params.index(entry)
        else:
            index = entry % len(args)
        value, label = args[index], params[index]
        if is_array(value):
            found[label] = value
            continue
        fields = fields_of(value)
        if fields is None:
            continue
        for name, array in fields.items():
            if field in (None, "", name):
                found[f"{label}.{name}"] = array
    return found


def compare(
    what: str, a: dict[str, Any], b: dict[str, Any], rtol: float, atol: float
) -> dict[str, Any]:
    """Both sides' arrays under the labels they share (a struct's scratch fields are on one
    side only); raises ``AssertionError`` naming the array when they differ."""
    shared = sorted(set(a) & set(b))
    if not shared:
        raise Skip(f"{what}: no output arrays in common ({sorted(a)} vs {sorted(b)})")
    worst = 0.0
    for label in shared:
        x, y = to_host(a[label]), to_host(b[label])
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=f"{what}: {label}")
        if x.size:
            worst = max(worst, float(np.max(np.abs(x.astype(complex) - y.astype(complex)))))
    return {"arrays": shared, "max_abs_diff": worst}


def cuda_argument_class(host: Any) -> type:
    """struphy's CUDA argument class of a Pyccel argument object: ``Cuda<Name>`` in
    ``<package>/<module>_cuda.py`` beside ``<module>_kernels.py``."""
    cls = type(host)
    module_name = cls.__module__
    if not module_name.endswith("_kernels"):
        raise Skip(f"argument of type {cls.__name__} has no CUDA argument class")
    try:
        module = importlib.import_module(module_name.removesuffix("_kernels") + "_cuda")
        return getattr(module, f"Cuda{cls.__name__}")
    except (ImportError, AttributeError) as exc:
        raise Skip(f"no CUDA argument class for {cls.__name__}: {exc}") from exc


def hand_arguments(xp: Any, host_args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The hand-written kernel's arguments from the host ones (NumPy data): arrays copied to
    the device, Pyccel argument objects rebuilt as struphy's CUDA argument classes from the
    attributes named by their constructors (as struphy's owners create them on CuPy)."""
    out = []
    for a in host_args:
        if isinstance(a, np.ndarray):
            out.append(xp.asarray(a))
        elif isinstance(a, (bool, int, float, complex, np.generic)):
            out.append(a)
        else:
            cls = cuda_argument_class(a)
            params = list(inspect.signature(cls.__init__).parameters)[1:]
            missing = [p for p in params if not hasattr(a, p)]
            if missing:
                raise Skip(f"{type(a).__name__} lacks {missing} for {cls.__name__}")
            values = {
                p: xp.asarray(v) if isinstance(v, np.ndarray) else v
                for p, v in ((p, getattr(a, p)) for p in params)
            }
            try:
                out.append(cls(**values))
            except Exception as exc:  # struphy's own checks (degrees, dtypes): a reason to skip
                raise Skip(f"{cls.__name__} refuses the inputs: {exc}") from exc
    return tuple(out)


def hand_launch(name: str, hand: Any, args: tuple[Any, ...]) -> int:
    for a in args:
        if type(a).__name__ == "CudaMarkerArguments":
            return int(a.n_markers)
    if name in HAND_LAUNCH:
        return int(HAND_LAUNCH[name](args))
    rule = hand.n_threads_from
    if callable(rule):
        return int(rule(args))
    raise Skip(
        "no launch size known for the hand-written kernel (struphy's call site passes "
        "n_threads=; add it to HAND_LAUNCH)"
    )


#: The most launches in one timing (as many as take about 20 ms, at most this many).
REPS_CAP = 400


def run_case(
    pp: Any, xp: Any, cupy: Any, site: Path, label: str, opts: argparse.Namespace
) -> dict[str, Any]:
    from cunumpy.exceptions import CudaPortError
    from cunumpy.kernels._cuda_kernel import compile_kernels
    from cunumpy.kernels._tune import candidate_builds

    folder, name = pp.CASES[label][0], label.split(" ")[0]
    if not (site / folder / name / f"{name}_cuda.cu").is_file():
        raise Skip(f"no hand-written {name}_cuda.cu in {folder}/{name}")
    try:
        name, module, src, make, outputs = pp.load_case(site, label)
    except CudaPortError as exc:
        raise Skip(f"the translator refuses it: {exc}") from exc
    package = importlib.import_module(f"{folder.replace('/', '.')}.{name}")
    hand_kernel = getattr(package, name)
    hand = hand_kernel.cuda_kernel
    if hand is None:
        raise Skip(f"the folder's Kernel of {name} has no CUDA version")
    if outputs is None and hand_kernel.host_kernel.outputs is not None:
        outputs = hand_kernel.host_kernel.outputs
    host_fn = getattr(module, name)
    params = list(inspect.signature(host_fn).parameters)
    generated = src.cuda_kernel()
    variants = {
        v: variant_kernel(src, name, options)
        for v, options in opts.variant
        if "--tune" not in options
    }
    tol = {"rtol": opts.rtol, "atol": opts.atol}

    def build(seed: int) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]:
        """(host, hand-written, generated) arguments from the same data."""
        with xp.use_backend("numpy"):
            host = tuple(make("numpy", seed))
            for_hand = tuple(make("numpy", seed))
        with xp.use_backend("cupy"):
            hand_args = hand_arguments(xp, for_hand)
            gen = tuple(make("cupy", seed))
        return host, hand_args, gen

    # every build this case launches compiles at once (each compile lets go of the GIL; the
    # heaviest kernels take over a minute of NVRTC each), the tuner's candidates too: it then
    # finds them in the disk cache. Its "shipped" candidate is `generated` itself: not twice.
    at_once = {"hand-written": hand, "generated": generated, **variants}
    if any("--tune" in options for _, options in opts.variant):
        at_once |= {
            f"tune: {k}": kernel
            for k, kernel in candidate_builds(src).items()
            if (kernel.compile_options(), kernel.max_registers)
            != (generated.compile_options(), generated.max_registers)
        }
    compile_kernels(at_once, jobs=len(at_once))

    def launch(kernel: Any, args: tuple[Any, ...], n_threads: int) -> Callable[[], Any]:
        return lambda: kernel(*args, n_threads=n_threads)

    # 1. parity sizes: both CUDA versions against the host kernel
    host, hand_args, gen_args = build(opts.seed)
    with xp.use_backend("cupy"):
        n_hand, n_gen = hand_launch(name, hand, hand_args), src.n_threads_of(gen_args)
        try:
            hand(*hand_args, n_threads=n_hand)
        except Exception as exc:
            raise Skip(f"the hand-written kernel fails on these inputs: {exc}") from exc
        generated(*gen_args, n_threads=n_gen)
    with xp.use_backend("numpy"):
        host_fn(*host)
    host_out = selected(params, outputs, host)
    check = {
        "hand_vs_host": compare(
            f"{label}: hand-written vs host", selected(params, outputs, hand_args), host_out, **tol
        ),
        "generated_vs_host": compare(
            f"{label}: generated vs host", selected(params, outputs, gen_args), host_out, **tol
        ),
    }

    # 2. bench sizes: the two CUDA versions against each other
    tunings: dict[str, Any] = {}  # each --tune variant's choice (src.tuning holds the last)
    with pp.sized(opts.n):
        _, hand_args, gen_args = build(opts.seed + 1)
        for v, options in opts.variant:
            if "--tune" in options:  # the fastest build on data of the bench's size
                tune_args = build(opts.seed + 2)[2]
                with xp.use_backend("cupy"):
                    variants[v] = src.tuned_kernel(*tune_args)
                tunings[v] = src.tuning
        var_args = {v: build(opts.seed + 1)[2] for v in variants}
    with xp.use_backend("cupy"):
        n_hand, n_gen = hand_launch(name, hand, hand_args), src.n_threads_of(gen_args)
        hand(*hand_args, n_threads=n_hand)
        generated(*gen_args, n_threads=n_gen)
        check["generated_vs_hand"] = compare(
            f"{label}: generated vs hand-written",
            selected(params, outputs, gen_args),
            selected(params, outputs, hand_args),
            **tol,
        )
        for vname, kernel in variants.items():
            kernel(*var_args[vname], n_threads=n_gen)
            check[f"{vname}_vs_hand"] = compare(
                f"{label}: generated ({vname}) vs hand-written",
                selected(params, outputs, var_args[vname]),
                selected(params, outputs, hand_args),
                **tol,
            )

        # 3. interleaved timing
        run_hand, run_gen = launch(hand, hand_args, n_hand), launch(generated, gen_args, n_gen)
        run_var = {v: launch(k, gen_args, n_gen) for v, k in variants.items()}
        hand_ms, gen_ms = [], []
        var_ms: dict[str, list[float]] = {v: [] for v in variants}
        # between plain events: the device's time and its waits for the host
        wall = {"hand": [], "generated": []}
        host = {"hand": [], "generated": []}
        reps = opts.reps
        if reps is None:  # as many launches as take about 20 ms on the slower side
            slowest = max(timed_ms(cupy, run_hand, 1), timed_ms(cupy, run_gen, 1), 1e-3)
            reps = max(1, min(REPS_CAP, round(20.0 / slowest)))
        # the side timed first in a round can meet a GPU that idled through the host work
        # before it: the order alternates between rounds, so neither side always goes first
        sides = [(hand_ms, run_hand, "hand"), (gen_ms, run_gen, "generated")]
        sides += [(var_ms[v], run, None) for v, run in run_var.items()]
        for r in range(opts.rounds):
            for times, run, side in sides if r % 2 == 0 else sides[::-1]:
                if opts.device == "gpu":
                    device_ms, host_ms = queued_ms(cupy, run, reps)
                    times.append(device_ms)
                    if side:
                        host[side].append(host_ms)
                        wall[side].append(timed_ms(cupy, run, reps))
                else:  # the emulated device runs a launch while the host queues it
                    times.append(timed_ms(cupy, run, reps))
    h, g = statistics.median(hand_ms), statistics.median(gen_ms)
    launch_costs = {
        f"{side}_{what}_ms": statistics.median(values[side])
        for what, values in (("wall", wall), ("host", host))
        for side in ("hand", "generated")
        if values[side]
    }
    sizes = {k: list(v.shape) for k, v in selected(params, outputs, gen_args).items()}
    # registers a thread (None on the emulated device): the generated kernel's are after the
    # register cap of GeneratedCuda.cuda_kernel(), where it applied
    registers = {
        side: (kernel.attributes or {}).get("num_regs")
        for side, kernel in (("hand", hand), ("generated", generated), *variants.items())
    }
    return {
        "registers": registers,
        "hand_ms": h,
        "generated_ms": g,
        "ratio": h / g if g > 0 else None,
        "rounds": opts.rounds,
        "reps": reps,
        "n_threads": {"hand": n_hand, "generated": n_gen},
        "outputs": sizes,
        "hand_ms_rounds": hand_ms,
        "generated_ms_rounds": gen_ms,
        **launch_costs,
        "check": check,
        # which build each --tune variant chose, and the candidates' times on the case's data
        "tuning": tunings,
        "variants": {
            v: {
                "options": dict(opts.variant)[v],
                "generated_ms": statistics.median(ms),
                "ratio": h / statistics.median(ms),
                "generated_ms_rounds": ms,
            }
            for v, ms in var_ms.items()
        },
    }


def table(paths: list[Path]) -> str:
    """Markdown: per kernel, the median over the runs of hand_ms, generated_ms and ratio, the
    ratios of the runs, the launch sizes; then the skipped cases and disagreements."""
    runs = [json.loads(p.read_text()) for p in paths]
    labels: list[str] = []
    for run in runs:
        labels += [k for k in run["results"] if k not in labels]
    first = runs[0]
    variant_names = list(first.get("variants", {}))
    # runs before 2026-12-03's ninth session: at most 20 launches, the hand-written side first
    reps = first["reps"] or f"1 to {first.get('reps_cap', 20)} (adaptive)"
    order = first.get("order", "hand-written first")
    queued = first.get("timing") == "queued"
    lines = [
        f"`benches/generated_cuda_struphy.py`, {first['device']}, n = {first['n']}, "
        f"{len(runs)} run(s) of {first['rounds']} rounds of {reps} launches ({order}"
        + ("; queued behind a spin kernel: device time" if queued else "")
        + "); ratio = hand-written time / generated time (target >= 0.9)",
        "",
        "| kernel | hand ms | generated ms | ratio (median) | ratios of the runs "
        "| threads hand / generated |"
        + "".join(f" ratio {v} |" for v in variant_names)
        + (" plain events ms hand / gen. | host ms a launch hand / gen. |" if queued else "")
        + " registers hand / gen. |",
        "| --- | --- | --- | --- | --- | --- |"
        + " --- |" * len(variant_names)
        + (" --- | --- |" if queued else "")
        + " --- |",
    ]
    medians = []
    for label in labels:
        rs = [run["results"][label] for run in runs if label in run["results"]]
        ratios = [r["ratio"] for r in rs if r["ratio"]]
        ratio = statistics.median(ratios) if ratios else None
        if ratio is not None:
            medians.append(ratio)
        threads = rs[0]["n_threads"]
        shown = "-" if ratio is None else f"{ratio:.3f}"
        if ratio is not None and ratio < 0.9:
            shown = f"**{shown}**"
        lines.append(
            f"| {label} | {statistics.median(r['hand_ms'] for r in rs):.4g} "
            f"| {statistics.median(r['generated_ms'] for r in rs):.4g} | {shown} "
            f"| {' / '.join(f'{x:.3f}' for x in ratios)} "
            f"| {threads['hand']} / {threads['generated']} |"
            + "".join(f" {variant_ratio(rs, v)} |" for v in variant_names)
            + (f" {side_medians(rs, 'wall')} | {side_medians(rs, 'host')} |" if queued else "")
            + f" {registers_shown(rs[0])} |"
        )
    if medians:
        below = sum(1 for r in medians if r < 0.9)
        lines += [
            "",
            f"{len(medians)} kernels timed; {below} below 0.9x (bold); geometric mean "
            f"{statistics.geometric_mean(medians):.3f}.",
        ]
    if variant_names:
        lines.append("")
    for v in variant_names:
        ratios = []
        for label in labels:
            rs = [run["results"][label] for run in runs if label in run["results"]]
            of_runs = [r["variants"][v]["ratio"] for r in rs if v in r.get("variants", {})]
            if of_runs:
                ratios.append(statistics.median(of_runs))
        if ratios:
            lines.append(
                f"Variant {v} (`{first['variants'][v]}`): {sum(1 for r in ratios if r < 0.9)} of "
                f"{len(ratios)} below 0.9x; geometric mean {statistics.geometric_mean(ratios):.3f}."
            )
    for key, what in (("skipped", "Skipped"), ("disagree", "Disagree"), ("errors", "Errors")):
        entries = {k: v for run in runs for k, v in run.get(key, {}).items()}
        if entries:
            lines += ["", f"{what}:", ""] + [f"- {k}: {v}" for k, v in entries.items()]
    return "\n".join(lines)


def side_medians(results: list[dict[str, Any]], what: str) -> str:
    """``hand / generated``: the medians over the runs of ``hand_<what>_ms`` and
    ``generated_<what>_ms``."""
    return " / ".join(
        f"{statistics.median(r[f'{side}_{what}_ms'] for r in results):.4g}"
        for side in ("hand", "generated")
    )


#: variant options that are CudaKernel's, not NVRTC's: ``--block=64``, ``--max-registers=112``
KERNEL_OPTIONS = {"--block=": "block_size", "--max-registers=": "max_registers"}


def variant_kernel(src: Any, kernel: str, options: list[str]) -> Any:
    """The generated kernel built with NVRTC `options`; an option ``--source=DIR`` swaps in
    DIR/<kernel>.cu (an edited copy of the source) where there is one; ``--block=N`` and
    ``--max-registers=N`` (``none``: no cap) set those ``CudaKernel`` parameters."""
    settings: dict[str, Any] = {}
    for option in options:
        for prefix, parameter in KERNEL_OPTIONS.items():
            if option.startswith(prefix):
                value = option.removeprefix(prefix)
                settings[parameter] = None if value == "none" else int(value)
    nvrtc = [
        o
        for o in options
        if not o.startswith("--source=") and not o.startswith(tuple(KERNEL_OPTIONS))
    ]
    for option in options:
        edited = Path(option.removeprefix("--source=")) / f"{kernel}.cu"
        if option.startswith("--source=") and edited.is_file():
            text = type(src)(edited.read_text())
            text.__dict__.update(src.__dict__)  # what the translator decided: launch shape, structs
            src = text
    return src.cuda_kernel(options=nvrtc, **settings)


def registers_shown(result: dict[str, Any]) -> str:
    """``hand / generated`` registers a thread, ``-`` where a run did not record them."""
    registers = result.get("registers") or {}
    return " / ".join(str(registers.get(side) or "-") for side in ("hand", "generated"))


def variant_ratio(results: list[dict[str, Any]], name: str) -> str:
    """The median over the runs of variant `name`'s ratio, as the table shows it."""
    ratios = [r["variants"][name]["ratio"] for r in results if name in r.get("variants", {})]
    if not ratios:
        return "-"
    ratio = statistics.median(ratios)
    return f"**{ratio:.3f}**" if ratio < 0.9 else f"{ratio:.3f}"


def parse_variant(text: str) -> tuple[str, list[str]]:
    """``NAME=OPTIONS`` -> (NAME, the options split at whitespace or commas: a comma keeps
    several options one shell word, as in ``GPU_CHECK_STRUPHY_ARGS``)."""
    name, sep, options = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"--variant wants NAME=OPTIONS, got {text!r}")
    return name.strip(), options.replace(",", " ").split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "site", type=Path, nargs="?", help="where struphy and feectools are installed"
    )
    parser.add_argument("--table", type=Path, nargs="+", help="runs' JSON: print their table")
    parser.add_argument("--device", choices=("gpu", "emulated"), default="gpu")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--reps", type=int, default=None, help="launches per timed round (default: adaptive)"
    )
    parser.add_argument("--n", type=int, default=None, help="markers / points per case")
    parser.add_argument("--rtol", type=float, default=1e-10)
    parser.add_argument("--atol", type=float, default=1e-10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--only",
        nargs="*",
        action="extend",
        default=None,
        help="labels (or kernel names) to run; repeated, the lists add up",
    )
    parser.add_argument(
        "--only-label", default=None, help="exactly this label (what --isolate gives each case)"
    )
    parser.add_argument(
        "--package", choices=["struphy", "feectools"], help="only that package's kernels"
    )
    parser.add_argument(
        "--one-case-per-kernel",
        action="store_true",
        help="time only the first case of each kernel (a short GPU session)",
    )
    parser.add_argument(
        "--variant",
        type=parse_variant,
        action="append",
        default=[],
        help="NAME=OPTIONS: also time the generated kernel compiled with these NVRTC options",
    )
    parser.add_argument(
        "--warm-jobs",
        type=int,
        default=0,
        help="with --isolate: first run every case untimed, this many at a time (fills the cache)",
    )
    parser.add_argument(
        "--warm-only",
        action="store_true",
        help="with --warm-jobs: stop after the warm-up (nothing timed; the cache is filled)",
    )
    parser.add_argument(
        "--isolate",
        action="store_true",
        help="each case in a process of its own (a GPU fault loses one case, not the rest)",
    )
    opts = parser.parse_args()
    if opts.table:
        print(table(opts.table))
        return
    if opts.site is None:
        parser.error("give SITE (where struphy and feectools are installed) or --table")
    emulated = opts.device == "emulated"
    if opts.n is None:
        opts.n = 300 if emulated else 1_000_000
    if opts.reps is None and emulated:
        opts.reps = 1

    site = opts.site.resolve()
    sys.path.insert(0, str(site))
    stand_in = pyccel_decorators_in_place()
    pp = load_port_parity()
    labels = selected_labels(pp, opts)
    if opts.isolate:
        report = run_isolated(labels, opts, stand_in)
        print(json.dumps(report, indent=2))
        sys.exit(1 if report["disagree"] or report["errors"] else 0)

    if emulated:
        from cunumpy.kernel_testing import install_fake_cupy

        cupy = install_fake_cupy()
    else:
        import cupy
    import cunumpy as xp

    results: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    errors: dict[str, str] = {}
    for label in labels:
        print(f"{label} ...", file=sys.stderr, flush=True)
        try:
            results[label] = run_case(pp, xp, cupy, site, label, opts)
            r = results[label]
            print(
                f"  hand {r['hand_ms']:.4g} ms, generated {r['generated_ms']:.4g} ms, "
                f"ratio {r['ratio']:.3f}",
                file=sys.stderr,
                flush=True,
            )
        except Skip as exc:
            skipped[label] = str(exc)
            print(f"  skipped: {exc}", file=sys.stderr, flush=True)
        except AssertionError as exc:
            failed[label] = " ".join(str(exc).split())[:2000]
            print(f"  DISAGREES: {exc}", file=sys.stderr, flush=True)
        except Exception as exc:  # a case that breaks is reported; the others still run
            errors[label] = f"{type(exc).__name__}: {exc}"
            print(f"  ERROR: {errors[label]}", file=sys.stderr, flush=True)
    report = make_report(opts, stand_in, results, skipped, failed, errors)
    print(json.dumps(report, indent=2))
    sys.exit(1 if failed or errors else 0)


def selected_labels(pp: Any, opts: argparse.Namespace) -> list[str]:
    """The labels of ``pp.CASES`` that ``--only``, ``--package`` and ``--one-case-per-kernel``
    keep, in the table's order."""
    labels = []
    kernels_seen: set[str] = set()
    for label, (folder, _) in pp.CASES.items():
        if opts.only_label is not None and label != opts.only_label:
            continue
        if opts.only and label not in opts.only and label.split(" ")[0] not in opts.only:
            continue
        if opts.package and not folder.startswith(opts.package):
            continue
        if opts.one_case_per_kernel and label.split(" ")[0] in kernels_seen:
            continue
        kernels_seen.add(label.split(" ")[0])
        labels.append(label)
    return labels


def run_isolated(labels: list[str], opts: argparse.Namespace, stand_in: bool) -> dict[str, Any]:
    """Each label run by this script in a child process of its own (``--only-label``), their
    reports merged; a child that dies without a report (a GPU fault kills the context it ran
    in) counts as an error of its case with the end of its output."""
    import subprocess

    passed_on = [str(opts.site), "--device", opts.device, "--rounds", str(opts.rounds)]
    passed_on += ["--n", str(opts.n), "--rtol", str(opts.rtol), "--atol", str(opts.atol)]
    passed_on += ["--seed", str(opts.seed)]
    for name, options in opts.variant:
        passed_on.append(f"--variant={name}={' '.join(options)}")
    if opts.warm_jobs > 0:
        warm_all(labels, passed_on, opts.warm_jobs)
        if opts.warm_only:
            return make_report(opts, stand_in, {}, {}, {}, {})
    if opts.reps is not None:
        passed_on += ["--reps", str(opts.reps)]
    merged: dict[str, dict[str, Any]] = {"results": {}, "skipped": {}, "disagree": {}, "errors": {}}
    for label in labels:
        cmd = [sys.executable, __file__, *passed_on, "--only-label", label]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        sys.stderr.write(proc.stderr)
        try:
            child = json.loads(proc.stdout)
        except json.JSONDecodeError:
            tail = " ".join((proc.stdout + proc.stderr).split())[-2000:]
            merged["errors"][label] = f"the case's process ended ({proc.returncode}): {tail}"
            continue
        for key in merged:
            merged[key].update(child.get(key, {}))
    return make_report(opts, stand_in, *merged.values())


def warm_all(labels: list[str], passed_on: list[str], jobs: int) -> None:
    """Every case once, untimed (one round of one launch), `jobs` child processes at a time:
    their compiles fill the kernel cache, which the timed pass then reads."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    def one(label: str) -> None:
        cmd = [sys.executable, __file__, *passed_on, "--rounds", "1", "--reps", "1"]
        subprocess.run([*cmd, "--only-label", label], capture_output=True, text=True)

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, labels))
    print(f"warmed {len(labels)} cases, {jobs} at a time", file=sys.stderr, flush=True)


def make_report(
    opts: argparse.Namespace,
    stand_in: bool,
    results: dict[str, Any],
    skipped: dict[str, str],
    failed: dict[str, str],
    errors: dict[str, str],
) -> dict[str, Any]:
    """The run's JSON: each case's timings, what was skipped, disagreed or broke, a summary."""
    ratios = [r["ratio"] for r in results.values() if r["ratio"]]
    return {
        "benchmark": "generated_cuda_struphy",
        "device": opts.device,
        "n": opts.n,
        "rounds": opts.rounds,
        "reps": opts.reps,
        "reps_cap": REPS_CAP,
        "order": "alternating",
        # GPU: device time per launch, the launches queued behind a spin kernel (queued_ms)
        "timing": "queued" if opts.device == "gpu" else "events",
        "pyccel_decorators": "identity stand-in" if stand_in else "pyccel's",
        "variants": {name: " ".join(options) for name, options in opts.variant},
        "results": results,
        "skipped": skipped,
        "disagree": failed,
        "errors": errors,
        "summary": {
            "timed": len(results),
            "skipped": len(skipped),
            "disagree": len(failed),
            "errors": len(errors),
            "min_ratio": min(ratios) if ratios else None,
            "geomean_ratio": statistics.geometric_mean(ratios) if ratios else None,
            "below_0.9": sorted(k for k, r in results.items() if r["ratio"] and r["ratio"] < 0.9),
        },
    }


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main()
