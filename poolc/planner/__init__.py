"""Planning: from the validated configuration to a Plan.

Importing this package must stay cheap: the CP-SAT model (poolc.planner.optimal)
imports ortools and is only imported when `poolc plan` runs the optimal strategy.
"""
