"""TransferBudget: per-phase counts with innermost attribution and per-phase rules, on the
emulated device (where host/device copies exist) and on NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import TransferBudgetExceeded, TransferRuleError
from cunumpy.profiling import TransferBudget


@pytest.fixture
def fake():
    from cunumpy.kernel_testing import install_fake_cupy, uninstall_fake_cupy

    cupy = install_fake_cupy()
    try:
        with xp.use_backend("cupy", strict=True):
            yield cupy
    finally:
        uninstall_fake_cupy()


def test_phases_nest_and_rules_are_checked(fake):
    budget = TransferBudget()
    x = fake.ones(4)

    @budget.count("diagnostics")
    def diagnostics():
        return xp.to_numpy(fake.sum(x))  # one 8-byte to_host

    for _ in range(3):
        with budget.phase("step"):
            x = 2.0 * x
            diagnostics()
    with budget.phase("output"):
        xp.to_numpy(x)
        xp.to_numpy(x)
    assert budget.calls == {"step": 3, "diagnostics": 3, "output": 1}
    assert budget["step"].to_host == 0  # counted in the innermost phase only
    assert budget["diagnostics"].to_host == 3 and budget["diagnostics"].bytes_to_host == 24
    assert budget["never"].total == 0
    budget.require("step", calls=3)
    budget.require("diagnostics", allow={"to_host": {"max_nbytes": 8, "max_count": 3}})
    budget.require("output", allow={"to_host": {"max_count": 1, "blocking": True}})
    broken = budget.violations()
    assert len(broken) == 1 and "2 to_host events > max_count 1" in broken[0]
    with pytest.raises(TransferBudgetExceeded, match="transfer budget exceeded") as info:
        budget.check()
    assert isinstance(info.value, AssertionError)
    assert "phase 'output' (1 call(s))" in str(info.value)
    budget.require("output", allow={"to_host": {"max_total_bytes": 64}})
    budget.check()
    budget.require("output", allow={"to_host": {"blocking": False}})
    assert all("blocking=True" in v for v in budget.violations())
    budget.require("output")  # nothing allowed
    assert len(budget.violations()) == 2 and "to_host is not allowed" in budget.violations()[0]


def test_recursion_counts_once_and_stopped_budgets_count_nothing(fake):
    budget = TransferBudget(started=False)
    with budget.phase("a"):
        xp.to_numpy(fake.ones(2))
    assert budget.calls == {} and budget["a"].total == 0
    budget.start()

    def walk(depth):
        with budget.phase("walk"):
            xp.to_numpy(fake.ones(1))
            if depth:
                walk(depth - 1)

    walk(2)
    assert budget.calls["walk"] == 1 and budget["walk"].to_host == 3
    budget.stop()
    walk(1)
    assert budget["walk"].to_host == 3


def test_rule_errors_and_numpy():
    budget = TransferBudget()
    with pytest.raises(TransferRuleError, match="unknown event kind 'to_gpu'"):
        budget.require("s", allow={"to_gpu": None})
    with pytest.raises(TransferRuleError, match=r"unknown limit\(s\) \['max_bytes'\]"):
        budget.require("s", allow={"to_host": {"max_bytes": 1}})
    with budget.phase("step"):
        y = 2.0 * xp.ones(4)
    budget.require("step", allow={"to_host": {"max_nbytes": 8}}, calls=1)
    budget.check()
    assert budget.violations() == [] and np.all(y == 2.0)
    assert "0 broken rule(s)" in budget.report()
