"""Offline, deterministic simulation of Kueue v0.19's classical scheduler.

Give it Kueue API objects (ResourceFlavor, Cohort, ClusterQueue, LocalQueue,
WorkloadPriorityClass as plain dicts) and a list of workloads; it replays
Kueue's admission cycles (quota tree with borrowing and lending limits, flavor
assignment, classical preemption, BestEffortFIFO / StrictFIFO queues) and says
which workloads end admitted, pending or preempted, and why.
"""

from .model import Outcome, Simulation, Workload
from .quantity import canonical_units, parse_quantity
from .scheduler import simulate

__all__ = ["Outcome", "Simulation", "Workload", "canonical_units", "parse_quantity", "simulate"]
