"""Offline, deterministic simulation of Kueue v0.19's classical scheduler.

Give it Kueue API objects (ResourceFlavor, Cohort, ClusterQueue, LocalQueue as
plain ``kueue.x-k8s.io/v1beta2`` dicts) and workloads; it replays Kueue's
admission cycles and says which workloads end admitted, pending or preempted,
on which flavors, and why. One module per concern:

* ``quantity`` - Kubernetes quantities and Kueue's integer units;
* ``objects`` - a typed view of the API objects, with CRD defaults;
* ``quota`` - the cohort tree: available / potential capacity, borrowing and
  lending limits at every level, usage propagation;
* ``flavors`` - flavor assignment (node selector and required node affinity
  against the flavors' nodeLabels, Fit / Preempt / NoFit, borrowing level,
  flavorFungibility, scan progress);
* ``preemption`` - classical preemption candidates, order and minimal set;
* ``queues`` - BestEffortFIFO / StrictFIFO queues, parking, sticky preemptors,
  scheduling-equivalence bulk parking;
* ``scheduler`` - the cycle loop, batches and the result.

Not modelled: fair sharing (and admission fair sharing), admission checks,
topology-aware scheduling, partial admission, multiple PodSets, node taints
of flavors (every flavor's taints are assumed tolerated),
stopPolicy, waitForPodsReady, requeue backoff, elastic workloads and
concurrent admission.
"""

from .api import Outcome, Simulation, Workload
from .quantity import canonical_units, parse_quantity
from .scheduler import simulate

__all__ = ["Outcome", "Simulation", "Workload", "canonical_units", "parse_quantity", "simulate"]
