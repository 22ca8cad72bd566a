"""The ``cunumpy`` command line: one module per subcommand.

Each module named in ``SUBCOMMANDS`` lives in this package and defines
``add_parser(subparsers)``, which adds its parser and sets ``func`` (a callable taking the parsed
arguments and returning the exit status) as the parser's default. Modules are imported only when
the command line runs, so ``import cunumpy`` never pays for them.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

# Add a subcommand by writing its module and naming it here.
SUBCOMMANDS: tuple[str, ...] = ("info", "check", "catalog", "cache", "port")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand of ``SUBCOMMANDS``."""
    parser = argparse.ArgumentParser(prog="cunumpy", description="cunumpy's command line")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"{__name__}.{name}").add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return int(func(args) or 0)
