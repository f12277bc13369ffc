"""What the forecast's work costs (docs/forecast.md#money).

A pool's ``spec.price`` prices every unit-hour its steps hold (``gpu_hour`` per
GPU, ``cpu_hour`` per core, ``memory_gb_hour`` per decimal GB, ``<key>_hour`` for
any other key). A SageMaker step is billed by AWS for its instance, whatever pool
counts it: it is priced by the instance type the `sagemaker` target chooses,
from the indicative price table shipped in the instance catalog (or a table the
user gives). Work with no price is counted in hours and left out of the money.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..domain.catalog import choose_instance, load_catalog
from ..model import SageMakerComponent
from ..requests import StepRequest

# Where the shipped prices come from, and when the table was put together.
PRICE_TABLE_SOURCE = ("poolc's SageMaker instance catalog (poolc/domain/instance_types.csv): indicative USD per "
                      "instance-hour in us-east-1, each row citing its source")
PRICE_TABLE_DATE = "2026-11-22"
# A price key's unit -> the request key it prices and the units of that key in one unit.
_UNITS = {"gpu": ("gpu", 1), "cpu": ("mcpu", 1000), "memory_gb": ("memory_mb", 1000)}


@dataclass(frozen=True)
class Rates:
    """USD per unit-hour of each request key (``mcpu``: per milli-CPU)."""

    per_key: Mapping[str, float]

    def hourly(self, holds: Mapping[str, int]) -> float:
        return sum(self.per_key.get(k, 0.0) * v for k, v in holds.items())


def pool_rates(price: Mapping[str, float] | None) -> Rates | None:
    """A pool's ``spec.price`` as rates per request key; None when it sets none."""
    if not price:
        return None
    per_key: dict[str, float] = {}
    for name, usd in price.items():
        unit = name.removesuffix("_hour")
        key, per = _UNITS.get(unit, (unit, 1))
        per_key[key] = usd / per
    return Rates(per_key)


# a price is a plain decimal (no "nan", "inf", "1e999", "$4"), an instance type the
# catalog's pattern; the file's values reach messages only as short, quoted text (#42)
_USD = re.compile(r"[0-9]{1,9}(\.[0-9]{1,9})?")
_INSTANCE = re.compile(r"ml\.[a-z0-9]{1,20}\.[a-z0-9]{1,20}")


def _shown(value: object) -> str:
    text = "" if value is None else str(value)
    return repr(text if len(text) <= 40 else text[:40] + "…")


def read_price_table(text: str, source: str) -> dict[str, float]:
    """A user's instance price table: CSV with columns instance_type and usd_hour.
    ValueError says which line is wrong."""
    rows = csv.DictReader(io.StringIO(text))
    found: dict[str, float] = {}
    try:
        if rows.fieldnames is None or not {"instance_type", "usd_hour"} <= set(rows.fieldnames):
            raise ValueError(f"{source}:1: the header must name the columns instance_type and usd_hour")
        for row in rows:
            line = rows.line_num
            name, usd = row["instance_type"], (row["usd_hour"] or "").strip()
            if not isinstance(name, str) or not _INSTANCE.fullmatch(name.strip()):
                raise ValueError(f"{source}:{line}: instance_type {_shown(name)} is not a SageMaker instance type "
                                 "such as ml.g5.xlarge")
            if not _USD.fullmatch(usd):
                raise ValueError(f"{source}:{line}: usd_hour {_shown(row['usd_hour'])} must be finite and not "
                                 "negative, a plain decimal number of US dollars such as 4.10")
            found[name.strip()] = float(usd)
    except csv.Error as exc:   # a field over the csv module's 131,072 characters, a NUL byte
        raise ValueError(f"{source}:{rows.line_num}: not a CSV line poolc reads ({exc})") from None
    return found


def instance_prices(override: Mapping[str, float] | None = None) -> dict[str, float]:
    """Instance type -> USD per hour: the shipped table, then the user's over it."""
    found = {t.name: t.price for t in load_catalog() if t.price is not None}
    found.update(override or {})
    return found


def sagemaker_rate(request: StepRequest, component: SageMakerComponent,
                   prices: Mapping[str, float]) -> tuple[str | None, float | None]:
    """(instance type, USD per hour) of a SageMaker step, as the target chooses it."""
    chosen = choose_instance(mcpu=request.demand.get("mcpu", 0), memory_mb=request.demand.get("memory_mb", 0),
                             gpu=request.demand.get("gpu", 0), gpu_type=request.settings.gpu_type,
                             allowed=component.instance_types)
    name = getattr(chosen, "name", None)
    return name, prices.get(name) if name is not None else None
