"""`poolc test`: scenarios rolled forward with arrivals, judged against numbers
worked out by hand, in every output format, and the examples' suite under the
optimal and kueue strategies."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import junitparser
import pytest
from support import cli

from poolc.scenario.command import run_tests

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = str(REPO / "examples")
QUEUE = str(REPO / "tests" / "fixtures" / "scenarios" / "queue.yaml")


def verdicts(paths: list[str], strategy: str = "optimal") -> dict[tuple[str, str], tuple[bool, str]]:
    report = run_tests(paths, strategy)
    assert report.diagnostics == ()
    return {(o.name, v.title): (v.passed, v.reason) for o in report.outcomes for v in o.verdicts}


# --- arrivals, worked by hand ------------------------------------------------------------
# gpus has 4 GPUs; train/fit takes all 4 for 2 h. The plan starts it at 0 (ends 2 h).
# train/fit@30m waits until 2 h (ends 4 h); train/fit@1h30m waits until 4 h (ends 6 h).
# GPU-hours admitted 3 x 4 x 2 = 24; waiting 4 x 1.5 + 4 x 2.5 = 16; utilisation 24 / (4 x 24) = 25 %.

@pytest.mark.parametrize("strategy", ["optimal", "zenml", "kueue"])
def test_arrivals_wait_for_the_completion_that_frees_their_pool(strategy):
    found = verdicts([QUEUE], strategy)
    assert found[("queue", "train/fit starts within 2 h")] == (
        False, "train/fit@1h30m starts +4 h, 2 h 30 min after it arrived")
    assert found[("queue", "train/fit is queued at +3 h")] == (True, "train/fit@1h30m is queued at +3 h")
    assert found[("queue", "train/fit is running at +5 h")][0]
    assert found[("queue", "train/fit is finished at +7 h")][0]
    assert found[("queue", "pool gpus: GPU utilisation at least 25% and at most 25% over 1 d")] == (
        True, "25% of 4 GPU held on average")
    assert found[("queue", "team t: GPU-hours admitted at least 24 GPU-h and at most 24 GPU-h over 1 d")][0]
    assert found[("queue", "team t: GPU-hours waiting at least 16 GPU-h and at most 16 GPU-h over 1 d")][0]


def test_a_failure_prints_the_timeline_that_decided_it():
    result = cli("test", QUEUE)
    assert result.exit_code == 1
    assert ("  FAIL train/fit starts within 2 h: train/fit@1h30m starts +4 h, 2 h 30 min after it arrived\n"
            "         +1 h 30 min train/fit@1h30m arrives\n"
            "         +4 h train/fit@1h30m runs on gpus (policy p), would end +6 h\n"
            "         +6 h train/fit@1h30m finishes\n"
            "         meanwhile on gpus: train/fit@30m started +2 h (4 GPU)\n") in result.stdout
    assert result.stdout.endswith("1 scenario, 8 expectations: 7 passed, 1 failed (strategy optimal)\n")


def test_arriving_later_than_the_horizon_never_starts(tmp_path):
    text = Path(QUEUE).read_text().replace("horizon: 1d", "horizon: 3h")
    (tmp_path / "q.yaml").write_text(text)
    found = verdicts([str(tmp_path / "q.yaml")])
    assert found[("queue", "train/fit starts within 2 h")] == (
        False, "train/fit@1h30m has not started at the horizon")


# --- the examples' suite -----------------------------------------------------------------

def test_the_examples_suite_passes_under_the_plans_intent():
    report = run_tests([EXAMPLES], "optimal")
    assert len(report.outcomes) >= 10
    assert report.passed, [(o.name, v.title, v.reason) for o in report.outcomes for v in o.verdicts if not v.passed]
    assert cli("test", EXAMPLES).exit_code == 0


def test_optimal_meets_what_kueue_breaks():
    """Kueue requeues the sweep the plan preempts (research-sweep-lr-02) ahead of the
    queued sweeps, so sweep_lr_03 starts at 3 h instead of 1 h."""
    title = ("sweeps-start-soon", "research-sweep/sweep_lr_03 starts within 2 h")
    assert verdicts([EXAMPLES], "optimal")[title] == (
        True, "research-sweep/sweep_lr_03 starts +1 h, 1 h after it arrived")
    assert verdicts([EXAMPLES], "kueue")[title] == (
        False, "research-sweep/sweep_lr_03 starts +3 h, 3 h after it arrived")
    shown = cli("test", EXAMPLES, "--strategy", "kueue", "--scenario", "sweeps-start-soon")
    assert shown.exit_code == 1
    assert "meanwhile on datacenter-one: research-sweep-lr-02 started +1 h (4 GPU, re-admitted after a " \
           "preemption)" in shown.stdout


def test_optimal_keeps_the_licence_kueue_does_not_meter():
    """tensorrt-licence: at +13 h three prod evaluations and a research export hold the
    licence's 4 TensorRT sessions; the export arriving at +13 h 30 min needs a fifth.
    The plan keeps it waiting until the evaluations end (+14 h); Kueue does not meter
    custom keys (warning P006), so it admits the export at once, over the licence."""
    title = ("tensorrt-licence", "research-sweep/export_trt is queued at +13 h 40 min")
    assert verdicts([EXAMPLES], "optimal")[title] == (
        True, "research-sweep/export_trt@13h30m is queued at +13 h 40 min")
    assert verdicts([EXAMPLES], "kueue")[title] == (
        False, "research-sweep/export_trt@13h30m is running at +13 h 40 min")
    shown = cli("test", EXAMPLES, "--strategy", "kueue", "--scenario", "tensorrt-licence")
    assert shown.exit_code == 1
    assert "+13 h 30 min research-sweep/export_trt@13h30m runs on datacenter-one (policy research-gpu-dc1)" \
        in shown.stdout


def test_a_named_state_runs_beside_the_allocation_documents():
    """online-eval starts from states/online-eval.json (prod's online evaluation on 2
    GPUs, never preempted, and six feature servers) as well as examples/state: the
    state's allocations and the documents' run side by side, and prod's
    non-preemptible work (2 GPUs and 7 step runs, then the 4-GPU retrain) fills its
    reserved 6 GPUs and 8 step runs exactly, so the retrain starts at once."""
    report = run_tests([EXAMPLES], "optimal", only=["online-eval"])
    (outcome,) = report.outcomes
    running = {r.id for r in outcome.rolled.forecast.schedule if r.start < 0}
    assert {"ranking-online-eval", "ranking-feature-server-6", "research-finetune-llama"} <= running
    verdict = {v.title: (v.passed, v.reason) for v in outcome.verdicts}
    assert verdict["prod-training/train_model starts within 2 h"] == (
        True, "prod-training/train_model starts +0 s, 0 s after it arrived")


def test_no_preemption_loop_counts_readmissions():
    found = verdicts([EXAMPLES], "kueue")
    assert found[("no-preemption-loop", "no preemption loop: no workload preempted and admitted again more than "
                  "1 times")][0]


def test_never_preempted_fails_for_the_sweep_the_plan_preempts(tmp_path):
    (tmp_path / "s.yaml").write_text(
        "apiVersion: poolc/v1\nkind: Scenario\nmetadata: {name: lr02}\nspec:\n  start: {time: '2026-11-20T06:00:00Z'}\n"
        "  durations: {research-sweep-lr-01: 6h}\n"   # started 01:00: it ends at +1 h
        "  expect:\n    - never_preempted: {step: research-sweep-lr-02}\n"
        "    - no_preemption_loop: {max_readmissions: 0}\n")
    paths = [str(REPO / "examples" / d) for d in ("pools", "policies", "stacks", "pipelines", "state")]
    found = verdicts([*paths, str(tmp_path)], "kueue")
    assert found[("lr02", "research-sweep-lr-02 is never preempted")] == (
        False, "research-sweep-lr-02 is preempted on datacenter-one at +0 s")
    # Kueue requeues it and admits it again when research-sweep-lr-01's GPUs free up: once
    loop = found[("lr02", "no preemption loop: no workload preempted and admitted again more than 0 times")]
    assert loop == (False, "research-sweep-lr-02 is preempted and admitted again 1 times")
    assert verdicts([*paths, str(tmp_path)], "optimal")[
        ("lr02", "no preemption loop: no workload preempted and admitted again more than 0 times")][0]


# --- outputs -------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["text", "json", "junit", "sarif", "markdown"])
def test_same_bytes_twice(fmt):
    first = cli("test", EXAMPLES, "--strategy", "kueue", "--format", fmt)
    second = cli("test", EXAMPLES, "--strategy", "kueue", "--format", fmt)
    assert first.exit_code == second.exit_code == 1
    assert first.stdout == second.stdout and first.stdout


def test_junit_reads_as_junit():
    """The JUnit shape CI tools read: testsuites > testsuite > testcase, a failure
    element per failed expectation, counts that add up; and junitparser, a JUnit
    reader as CI report tools use, reads the same failures."""
    out = cli("test", EXAMPLES, "--strategy", "kueue", "--format", "junit").stdout
    data = json.loads(cli("test", EXAMPLES, "--strategy", "kueue", "--format", "json").stdout)
    root = ET.fromstring(out)
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [s["name"] for s in data["scenarios"]]
    cases = [c for s in suites for c in s.findall("testcase")]
    failed = [c for c in cases if c.find("failure") is not None]
    expected_failed = [e for s in data["scenarios"] for e in s["expectations"] if not e["passed"]]
    assert len(cases) == int(root.get("tests")) == sum(len(s["expectations"]) for s in data["scenarios"])
    assert len(failed) == int(root.get("failures")) == len(expected_failed) > 0
    for suite in suites:
        assert int(suite.get("tests")) == len(suite.findall("testcase"))
        assert int(suite.get("failures")) == sum(1 for c in suite.findall("testcase") if c.find("failure") is not None)
    first = failed[0].find("failure")
    assert first.get("message") and first.text and "datacenter-one" in first.text
    xml = junitparser.JUnitXml.fromstring(out)
    read = [(case.classname, case.name, r.message) for suite in xml for case in suite for r in case.result
            if isinstance(r, junitparser.Failure)]
    assert read == [(s["name"], e["title"], e["reason"]) for s in data["scenarios"] for e in s["expectations"]
                    if not e["passed"]]


def test_sarif_points_at_the_failed_expectation():
    log = json.loads(cli("test", EXAMPLES, "--strategy", "kueue", "--format", "sarif").stdout)
    results = log["runs"][0]["results"]
    data = json.loads(cli("test", EXAMPLES, "--strategy", "kueue", "--format", "json").stdout)
    assert len(results) == sum(1 for s in data["scenarios"] for e in s["expectations"] if not e["passed"]) > 0
    where = {(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1],
              r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results}
    lines = (REPO / "examples" / "scenarios" / "04-sweeps-start-soon.yaml").read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "sweep_lr_03, within: 2h" in text)
    assert ("04-sweeps-start-soon.yaml", line) in where


def test_the_comment_leads_with_what_the_change_breaks(tmp_path):
    base = tmp_path / "base.json"
    base.write_text(cli("test", EXAMPLES, "--format", "json").stdout)
    shown = cli("test", EXAMPLES, "--strategy", "kueue", "--format", "markdown", "--base", str(base))
    assert shown.exit_code == 1
    data = json.loads(cli("test", EXAMPLES, "--strategy", "kueue", "--format", "json").stdout)
    broken = sum(1 for s in data["scenarios"] for e in s["expectations"] if not e["passed"])
    assert broken > 1
    assert shown.stdout.startswith(f"### This change breaks {broken} scenario expectations\n\n")
    assert ("- **sweeps-start-soon**: research-sweep/sweep_lr_03 no longer starts within 2 h: now "
            "starts +3 h, 3 h after it arrived (was 1 h)") in shown.stdout
    same = cli("test", EXAMPLES, "--format", "markdown", "--base", str(base))
    assert same.exit_code == 0
    total = sum(len(s["expectations"]) for s in json.loads(base.read_text())["scenarios"])
    assert total == sum(len(s["expectations"]) for s in data["scenarios"]) > 10
    assert same.stdout.startswith(f"No scenario expectation changes with this pull request ({total} of {total} hold).")
    assert ("- **dc1-busy**: pool datacenter-one: GPU utilisation at least 12% and at most 16% over 2 d: no longer "
            "holds: now 17.8% of 16 GPU held on average (was 13.7%)") in shown.stdout


def test_a_smaller_research_share_is_the_comments_headline(tmp_path):
    """The pull request lowers research-gpu-dc1's reserved GPUs 4 -> 3: of the two LoRA
    fine-tunes research-lora-share submits at +13 h 30 min onto a full datacenter-one,
    only one still fits research's guaranteed share (and so may push out a borrowing
    sweep); the other waits for a sweep to end. The comment leads with that one line."""
    base = tmp_path / "base.json"
    base.write_text(cli("test", EXAMPLES, "--format", "json").stdout)
    head = tmp_path / "examples"
    shutil.copytree(EXAMPLES, head)
    policies = head / "policies" / "research.yaml"
    text = policies.read_text("utf-8")
    share = text.index("name: research-gpu-dc1")
    policies.write_text(text[:share] + text[share:].replace("    gpu: 4\n", "    gpu: 3\n", 1), "utf-8")
    shown = cli("test", str(head), "--format", "markdown", "--base", str(base))
    assert shown.exit_code == 1
    assert shown.stdout.startswith(
        "### This change breaks 1 scenario expectation\n\n- **research-lora-share**: research-sweep/finetune_lora "
        "is no longer running at +13 h 40 min: now research-sweep/finetune_lora@\u200b13h30m1s is queued at "
        "+13 h 40 min (was running), because research-gpu-dc1's reserved GPU: 4 GPU → 3 GPU\n")
    # two bounds moved: named under what breaks, not guessed at as the cause of one line
    prod = head / "policies" / "prod.yaml"
    prod.write_text(prod.read_text("utf-8").replace("priority: 1000", "priority: 1001", 1), "utf-8")
    both = cli("test", str(head), "--format", "markdown", "--base", str(base))
    assert "(was running)\n" in both.stdout and ", because" not in both.stdout
    assert ("The change moves prod-k8s-dc1's priority: 1000 → 1001; research-gpu-dc1's reserved GPU: "
            "4 GPU → 3 GPU.\n") in both.stdout
    # a base report without bounds (an older poolc's) names no cause
    old = json.loads(base.read_text())
    del old["bounds"]
    base.write_text(json.dumps(old))
    bare = cli("test", str(head), "--format", "markdown", "--base", str(base))
    assert "(was running)\n" in bare.stdout and "because" not in bare.stdout and "moves" not in bare.stdout


def test_an_unreadable_base_is_said_and_ignored(tmp_path):
    (tmp_path / "base.json").write_text("{not json")
    shown = cli("test", QUEUE, "--format", "markdown", "--base", str(tmp_path / "base.json"))
    assert "is not JSON" in shown.stderr
    assert "**1 of 8 expectations fail**" in shown.stdout


# --- record ----------------------------------------------------------------------------------

def test_record_writes_a_scenario_that_holds(tmp_path):
    for part in ("pools", "policies", "stacks", "pipelines", "state"):
        shutil.copytree(REPO / "examples" / part, tmp_path / part)
    target = tmp_path / "scenarios" / "today.yaml"
    target.parent.mkdir()
    made = cli("test", str(tmp_path), "--record", str(target))
    assert made.exit_code == 0, made.stderr
    text = target.read_text()
    assert "starts_within: {step: research-sweep/export_trt, within: 721m}" in text
    assert "never_preempted: {step: prod-training/train_model}" in text
    assert "never_preempted: {step: research-sweep-lr-02}" not in text     # the plan preempts it
    ran = cli("test", str(tmp_path))
    assert ran.exit_code == 0, ran.stdout
    assert cli("test", str(tmp_path), "--record", str(target)).exit_code == 0
    assert target.read_text() == text


# --- bad input ---------------------------------------------------------------------------------

def test_bad_scenarios_are_positioned_diagnostics_and_no_scenario_runs():
    neg = REPO / "tests" / "fixtures"
    result = cli("test", str(neg / "context" / "platform.yaml"),
                 str(neg / "negative" / "e001-scenario-references.yaml"))
    assert result.exit_code == 1
    assert "e001-scenario-references.yaml:24:29: error[E001] scenario 'typos' names step 'train/fi', which is not " \
           "in the inputs; did you mean 'train/fit'?" in result.stdout
    assert "poolc: no scenarios run: the inputs do not validate" in result.stdout


def test_a_missing_state_file_is_said_at_the_scenario(tmp_path):
    text = Path(QUEUE).read_text().replace('start: {time: "2026-01-01T00:00:00Z"}',
                                           'start: {time: "2026-01-01T00:00:00Z", state: bad.json}')
    (tmp_path / "q.yaml").write_text(text)
    (tmp_path / "bad.json").write_text("{")
    result = cli("test", str(tmp_path))
    assert result.exit_code == 1
    assert "ERROR" in result.stdout and "bad.json" in result.stdout


@pytest.mark.parametrize("args", [["--format", "yaml"], ["--strategy", "fifo"], ["--scenario", "nope"],
                                  ["--record", "x.yaml", "--horizon", "2w"]])
def test_usage_errors_exit_2(args):
    assert cli("test", QUEUE, *args).exit_code == 2


def test_a_stale_scenario_fails_the_check_but_never_holds_apply_back(tmp_path):
    """A pull request removes a step a scenario names: validate, test and plan's exit
    code say so at the scenario's line, and apply still applies."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    pipeline = tmp_path / "examples" / "pipelines" / "prod-training.yaml"
    text = pipeline.read_text()
    pipeline.write_text(text[:text.index("    register_model:")])
    root = str(tmp_path / "examples")
    assert cli("validate", root).exit_code == 1
    tested = cli("test", root)
    assert tested.exit_code == 1 and "12-cpu-batch-rush.yaml:39:21: error[E001]" in tested.stdout
    planned = cli("plan", root, "--state", str(tmp_path / "none.json"))
    assert planned.exit_code == 1 and "Plan: strategy optimal" in planned.stdout
    applied = cli("apply", root, "--output-dir", str(tmp_path / "out"), "--state", str(tmp_path / "s.json"))
    assert applied.exit_code == 0, applied.stdout + applied.stderr


def test_junit_of_inputs_that_do_not_validate_is_an_error_not_an_empty_pass():
    out = cli("test", str(REPO / "tests" / "fixtures" / "negative" / "s001-scenario-structure.yaml"),
              "--format", "junit")
    assert out.exit_code == 1
    xml = junitparser.JUnitXml.fromstring(out.stdout)
    errors = [r for suite in xml for case in suite for r in case.result if isinstance(r, junitparser.Error)]
    assert len(errors) == 1 and "horizn" in errors[0].text


def test_no_scenarios_is_not_a_pass():
    out = cli("test", str(REPO / "examples" / "pools"))
    assert out.exit_code == 1
    assert "no scenarios (kind: Scenario) in the files given" in out.stderr
