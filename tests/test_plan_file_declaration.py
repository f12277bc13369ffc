"""The plan file is declared once (#43): domain/plan.py's records are what `poolc plan`
writes and what `show` and `apply --plan` read, through one pydantic adapter. So a
file read back writes its own bytes, every section included; what a field's type
allows is what a file may hold; and no second model of the file exists to drift."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from support import cli

from poolc.domain import plan_file
from poolc.domain.plan import Plan, to_json
from poolc.domain.plan_file import PlanFormatError, read_plan


@pytest.fixture
def plan_with_base(platform) -> str:
    """A plan with every optional section: changes, runtime, inputs, teams and `base`
    (a policy's priority changed against the base branch's plan)."""
    assert cli("plan", "examples", "--out", "base.json").exit_code == 0
    policies = Path("examples/policies/prod.yaml")
    policies.write_text(policies.read_text(encoding="utf-8").replace("priority: 500", "priority: 450", 1),
                        encoding="utf-8")
    assert cli("plan", "examples", "--base", "base.json", "--out", "head.json").exit_code == 0
    return Path("head.json").read_text(encoding="utf-8")


def test_a_plan_file_read_back_writes_its_own_bytes(plan_with_base):
    data = json.loads(plan_with_base)
    assert {"changes", "runtime", "inputs", "teams", "base"} <= set(data), sorted(data)
    assert data["base"]["inputs"], "the changed policy is in the base section"
    assert to_json(read_plan(plan_with_base)) == plan_with_base
    base = Path("base.json").read_text(encoding="utf-8")
    assert to_json(read_plan(base)) == base


def test_a_field_holds_only_what_its_type_allows(plan_with_base):
    data = json.loads(plan_with_base)
    data["requests"][0]["preemptible"] = 1            # a flag is true or false, not 1
    with pytest.raises(PlanFormatError, match=r"requests\[0\]: 'preemptible' must be bool"):
        read_plan(json.dumps(data))
    data = json.loads(plan_with_base)
    data["preempted"][0]["message"] = 3                 # a message is text, whose parts are marked once read
    with pytest.raises(PlanFormatError, match=r"preempted\[0\]: 'message' must be str"):
        read_plan(json.dumps(data))
    data = json.loads(plan_with_base)
    data["base"]["steps"] = [{"id": 7, "base": "queued", "head": "allocated"}]
    with pytest.raises(PlanFormatError, match=r"'base' is not the comparison .*base.steps\[0\]: 'id' must be str"):
        read_plan(json.dumps(data))


def test_what_the_file_does_not_carry_is_not_read(plan_with_base):
    data = json.loads(plan_with_base)
    data["requests"][0]["running"] = "someone-else"   # the planner's, never the file's
    data["requests"][0]["team"] = "not-its-team"      # worked out again from the plan
    plan = read_plan(json.dumps(data))
    assert plan.requests[0].running is None
    assert json.loads(to_json(plan))["requests"][0]["team"] != "not-its-team"


def test_a_messages_parts_are_marked_where_the_file_is_read(plan_with_base):
    """A saved plan's messages come back as the planner built them: text and parts."""
    from poolc.domain.said import Amount

    plan = read_plan(plan_with_base)
    victim = plan.preempted[0].message
    assert victim.text.startswith("preempted for ") and any(isinstance(p, Amount) for p in victim.parts)


def test_the_reader_declares_no_model_of_its_own():
    """No class in plan_file.py: the file's shape lives in domain/plan.py only."""
    tree = ast.parse(Path(plan_file.__file__).read_text(encoding="utf-8"))
    classes = [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    assert classes == ["PlanFileError"], classes
    assert Plan.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_a_request_may_leave_out_its_optional_names(plan_with_base):
    """As plan files always could: a request without requester, pool, policy or reason
    reads them as null."""
    data = json.loads(plan_with_base)
    for key in ("requester", "pool", "policy", "reason"):
        del data["requests"][0][key]
    request = read_plan(json.dumps(data)).requests[0]
    assert (request.requester, request.pool, request.policy, request.reason) == (None, None, None, None)
    del data["requests"][0]["message"]
    with pytest.raises(PlanFormatError, match=r"requests\[0\]: 'message' is missing"):
        read_plan(json.dumps(data))
