"""A transfer budget per phase of a time loop."""

import cunumpy as xp
from cunumpy.profiling import TransferBudget

budget = TransferBudget()
x = xp.ones(4)
for _step in range(3):
    with budget.phase("step"):
        x = 2.0 * x
    with budget.phase("diagnostics"):
        total = float(xp.sum(x))
budget.require("step", allow={}, calls=3)
budget.require("diagnostics", allow={"to_host": {"max_nbytes": 8}, "sync": {}}, calls=3)
budget.check()
print(total, budget.violations(), sorted(budget.calls.items()))
