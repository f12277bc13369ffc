"""`poolc plan` and `poolc apply --plan` through the command line (docs/cli.md): exit codes,
the JSON plan, byte-identical output across hash seeds, and saved plans that apply
exactly or are refused (inputs changed, edited by hand, not a plan at all).

Every test works on a copy of examples/ in tmp_path, so inputs can be edited.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import cli

REPO = Path(__file__).resolve().parent.parent
PROD_TRAINING = "examples/pipelines/prod-training.yaml"
SWEEP = "examples/pipelines/research-sweep.yaml"
ADMITTED = ["llm-finetune/distill", "llm-finetune/finetune", "llm-finetune/package_model",
            "llm-finetune/tokenize", "prod-training/evaluate", "prod-training/load_data",
            "prod-training/register_model", "prod-training/train_model", "research-sweep/summarize"]





def poolc(*args: str, cwd: Path, seed: str = "0") -> subprocess.CompletedProcess:
    """The real command in a fresh interpreter (hash seed, no shared imports)."""
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    env.pop("POOLC_DEBUG", None)
    done = subprocess.run([sys.executable, "-c", "from poolc.cli import main; main()", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def plan_json(*extra: str) -> tuple[int, dict]:
    result = cli("plan", "examples", "--format", "json", *extra)
    return result.exit_code, json.loads(result.stdout)


def outputs(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.relative_to(root).as_posix().startswith("examples/")}


def edit(path: str, old: str, new: str) -> None:
    text = Path(path).read_text(encoding="utf-8")
    assert old in text
    Path(path).write_text(text.replace(old, new, 1), encoding="utf-8")


# --- poolc plan ----------------------------------------------------------------------------------

def test_plan_exits_0_and_prints_the_plan(platform):
    result = cli("plan", "examples", "--strategy", "zenml")
    assert result.exit_code == 0, result.output
    assert "9 allocated, 5 queued, 0 rejected" in result.stdout
    assert "research-sweep-lr-02" in result.stdout
    assert "warning[P006]" in result.stderr and "warning[P006]" not in result.stdout   # stdout stays the plan


def test_plan_json_has_the_documented_shape(platform):
    code, plan = plan_json("--strategy", "zenml")
    assert code == 0
    assert plan["format_version"] == 1 and plan["inputs_digest"].startswith("sha256:")
    assert set(plan) >= {"requests", "preempted", "pools", "diagnostics", "solver"}
    assert plan["solver"]["strategy"] == "zenml"
    ids = [r["id"] for r in plan["requests"]]
    assert ids == sorted(ids) and len(ids) == 14
    assert sorted(r["id"] for r in plan["requests"] if r["status"] == "allocated") == ADMITTED
    assert {r["status"] for r in plan["requests"]} == {"allocated", "queued"}
    assert [(p["id"], p["pool"]) for p in plan["preempted"]] == [("research-sweep-lr-02", "datacenter-one")]
    assert [p["name"] for p in plan["pools"]] == ["aws-sagemaker", "cpu-batch", "datacenter-one"]
    assert [d["rule"] for d in plan["diagnostics"]] == ["P006"]


def test_optimal_is_the_default_and_agrees_with_zenml_on_the_examples(platform):
    code, optimal = plan_json()
    assert code == 0
    assert optimal["solver"]["strategy"] == "optimal" and optimal["solver"]["status"] == "OPTIMAL"
    assert optimal["solver"]["gap"] == 0.0
    _, zenml = plan_json("--strategy", "zenml")

    def decisions(plan):
        return ([(r["id"], r["status"], r["pool"], r["policy"]) for r in plan["requests"]],
                [(p["id"], p["pool"]) for p in plan["preempted"]])

    assert decisions(optimal) == decisions(zenml)               # examples/README.md: the same plan
    assert optimal["inputs_digest"] == zenml["inputs_digest"]


def test_plan_out_writes_exactly_the_json_output(platform):
    result = cli("plan", "examples", "--strategy", "zenml", "--format", "json", "--out", "plans/p.json")
    assert result.exit_code == 0
    assert Path("plans/p.json").read_text(encoding="utf-8") == result.stdout


def test_plan_exits_1_when_a_step_is_rejected_and_still_prints_the_plan(platform):
    # summarize is non-preemptible: research-k8s reserves mcpu 32000 on cpu-batch and nothing on
    # datacenter-one, so asking 40 cores can never be admitted (R004), though it is under every limit
    edit(SWEEP, "          cpu_count: 2\n          memory: 4GiB", "          cpu_count: 40\n          memory: 4GiB")
    code, plan = plan_json("--strategy", "zenml")
    assert code == 1
    summarize = next(r for r in plan["requests"] if r["id"] == "research-sweep/summarize")
    assert summarize["status"] == "rejected" and summarize["reason"] == "R004" and summarize["message"]
    assert summarize["pool"] is None
    assert any(d["rule"] == "R004" and d["severity"] == "error" and d["file"] == SWEEP
               for d in plan["diagnostics"])
    assert sum(r["status"] == "allocated" for r in plan["requests"]) == 8              # the rest is planned
    text = cli("plan", "examples", "--strategy", "zenml", "--detailed-exitcode")
    assert text.exit_code == 1                                          # an error wins over "changes"
    assert "1 rejected" in text.stdout and "error[R004]" in text.stderr
    applied = cli("apply", "examples", "--output-dir", "deploy")
    assert applied.exit_code == 1 and "nothing applied" in applied.stderr and not Path("deploy").exists()


def test_detailed_exitcode_2_with_changes_then_0_after_apply(platform):
    assert cli("plan", "examples", "--strategy", "zenml", "--detailed-exitcode").exit_code == 2
    assert cli("apply", "examples", "--output-dir", "deploy").exit_code == 0
    for strategy in ("zenml", "optimal"):
        again = cli("plan", "examples", "--state", "poolc.state.json", "--strategy", strategy,
                    "--detailed-exitcode")
        assert again.exit_code == 0, (strategy, again.output)
        assert "running steps: 0 start, 0 stop, " in again.stdout
    # the default state is the one apply wrote: the same command line plans the same world
    assert cli("plan", "examples", "--strategy", "zenml", "--detailed-exitcode").exit_code == 0
    # a state file that does not exist is said in one line, and planned as empty: changes again
    fresh = cli("plan", "examples", "--state", "other.state.json", "--strategy", "zenml", "--detailed-exitcode")
    assert fresh.exit_code == 2
    assert fresh.stderr.count("no state file other.state.json") == 1


def test_plan_bytes_do_not_depend_on_the_hash_seed(platform):
    runs = [poolc("plan", "examples", "--format", "json", cwd=platform, seed=seed) for seed in ("1", "987654")]
    assert [r.returncode for r in runs] == [0, 0]
    assert runs[0].stdout == runs[1].stdout
    assert json.loads(runs[0].stdout)["format_version"] == 1


def test_generated_files_do_not_depend_on_the_hash_seed(platform):
    for seed, out in (("3", "a"), ("31337", "b")):
        done = poolc("apply", "examples", "--output-dir", f"{out}/deploy", "--quiet", cwd=platform, seed=seed)
        assert done.returncode == 0, done.stderr
    assert outputs(platform / "a") == outputs(platform / "b")


def test_validation_errors_are_diagnostics_not_tracebacks(platform):
    Path("examples/pipelines/broken.yaml").write_text("apiVersion: poolc/v1\nkind: Pipeline\nspec: [\n",
                                                      encoding="utf-8")
    plan = poolc("plan", "examples", "--strategy", "zenml", cwd=platform)
    assert plan.returncode == 1 and "broken.yaml:" in plan.stderr
    applied = poolc("apply", "examples", "--output-dir", "deploy", cwd=platform)
    assert applied.returncode == 1 and "nothing applied" in applied.stderr
    assert not (platform / "deploy").exists() and not (platform / "poolc.state.json").exists()


# --- poolc apply --plan ---------------------------------------------------------------------------

def test_apply_a_saved_plan(platform):
    assert cli("plan", "examples", "--strategy", "zenml", "--out", "plan.json").exit_code == 0
    result = cli("apply", "examples", "--output-dir", "deploy", "--plan", "plan.json")
    assert result.exit_code == 0, result.output
    assert Path("deploy/kubernetes/ml-prod/prod-training--train_model.job.yaml").exists()
    saved = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    state = json.loads(Path("poolc.state.json").read_text(encoding="utf-8"))
    assert state["preempted"] == [p["id"] for p in saved["preempted"]]
    assert cli("apply", "examples", "--output-dir", "deploy", "--check").exit_code == 0


def test_saved_plan_made_against_the_state_applies_after_a_change(platform):
    assert cli("apply", "examples", "--output-dir", "deploy").exit_code == 0
    edit(PROD_TRAINING, "cpu_count: 0.5", "cpu_count: 1")
    assert cli("plan", "examples", "--state", "poolc.state.json", "--strategy", "zenml",
               "--out", "plan.json").exit_code == 0
    result = cli("apply", "examples", "--output-dir", "deploy", "--plan", "plan.json")
    assert result.exit_code == 0, result.output
    assert "wrote: kubernetes/ml-prod/prod-training--register_model.job.yaml" in result.stdout
    assert cli("apply", "examples", "--output-dir", "deploy", "--check").exit_code == 0


def test_saved_plan_is_refused_after_the_inputs_change(platform):
    assert cli("plan", "examples", "--strategy", "zenml", "--out", "plan.json").exit_code == 0
    edit(PROD_TRAINING, "cpu_count: 0.5", "cpu_count: 1")
    result = cli("apply", "examples", "--output-dir", "deploy", "--plan", "plan.json")
    assert result.exit_code == 1
    assert "nothing applied" in result.stderr and "poolc plan --out" in result.stderr
    assert outputs(platform) == {"plan.json": outputs(platform)["plan.json"]}       # nothing written


def test_saved_plan_is_refused_when_the_state_changed_since(platform):
    assert cli("plan", "examples", "--strategy", "zenml", "--out", "plan.json").exit_code == 0
    assert cli("apply", "examples", "--output-dir", "deploy", "--plan", "plan.json").exit_code == 0
    before = outputs(platform)
    again = cli("apply", "examples", "--output-dir", "deploy", "--plan", "plan.json")   # planned before apply
    assert again.exit_code == 1 and "poolc plan --out" in again.stderr
    assert outputs(platform) == before


@pytest.mark.parametrize("tamper", ["status", "pool", "preempted"])
def test_hand_edited_plan_with_the_right_digest_is_refused(platform, tamper):
    assert cli("plan", "examples", "--strategy", "zenml", "--out", "plan.json").exit_code == 0
    saved = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    quantize = next(r for r in saved["requests"] if r["id"] == "llm-finetune/quantize_adapter")
    if tamper == "status":
        quantize["status"] = "allocated"
    elif tamper == "pool":
        quantize["pool"], quantize["policy"] = "aws-sagemaker", "prod-sagemaker"
    else:
        saved["preempted"] = []
    Path("plan.json").write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    result = cli("apply", "examples", "--output-dir", "deploy", "--plan", "plan.json")
    assert result.exit_code == 1
    assert "does not match" in result.stderr and "poolc plan --out" in result.stderr
    assert not Path("deploy").exists() and not Path("poolc.state.json").exists()


def test_reformatted_plan_file_is_still_accepted(platform):
    """Refusal is about content, not bytes: the same JSON pretty-printed differently applies."""
    assert cli("plan", "examples", "--strategy", "zenml", "--out", "plan.json").exit_code == 0
    saved = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    Path("plan.json").write_text(json.dumps(saved, separators=(",", ":")), encoding="utf-8")
    assert cli("apply", "examples", "--output-dir", "deploy", "--plan", "plan.json").exit_code == 0


@pytest.mark.parametrize("text, says", [
    ("this is { not json\n", "not a plan file"),
    ("", "not a plan file"),
    ("[1, 2]\n", "not a poolc plan file"),
    ('{"format_version": 2, "inputs_digest": "sha256:00"}\n', "not a poolc plan file"),
    ('{"format_version": 1}\n', "not a poolc plan file"),
    ('{"format_version": 1, "inputs_digest": "sha256:00", "solver": {"strategy": "greedy"}}\n', "strategy"),
])
def test_not_a_plan_file_is_refused_cleanly(platform, text, says):
    Path("plan.json").write_text(text, encoding="utf-8")
    done = poolc("apply", "examples", "--output-dir", "deploy", "--plan", "plan.json", cwd=platform)
    assert done.returncode == 1, done.stderr
    assert says in done.stderr and "internal error" not in done.stderr
    assert not (platform / "deploy").exists() and not (platform / "poolc.state.json").exists()


def test_missing_or_binary_plan_file_is_refused_cleanly(platform):
    missing = cli("apply", "examples", "--output-dir", "deploy", "--plan", "nope.json")
    assert missing.exit_code == 1 and "cannot read plan file nope.json" in missing.stderr
    Path("bin.json").write_bytes(b"\xff\xfe\x00garbage")
    binary = cli("apply", "examples", "--output-dir", "deploy", "--plan", "bin.json")
    assert binary.exit_code == 1 and "bin.json" in binary.stderr
    assert not Path("deploy").exists()


@pytest.mark.parametrize("text", ['{"format_version": 1, "inputs_digest": "sha256:00", "solver": null}',
                                  '{"format_version": 1, "inputs_digest": "sha256:00", "solver": "optimal"}',
                                  "[" * 100_000])
def test_malformed_plan_structure_is_refused_not_an_internal_error(platform, text):
    Path("plan.json").write_text(text, encoding="utf-8")
    result = cli("apply", "examples", "--output-dir", "deploy", "--plan", "plan.json")
    assert result.exit_code == 1 and "internal error" not in result.stderr


@pytest.mark.parametrize("settings, field", [("cpu_count: 2000000000", "cpu_count"), ("memory: 2000PB", "memory")])
def test_a_request_above_10_to_the_12_is_a_diagnostic_not_an_internal_error(platform, settings, field):
    """cpu-batch meters both keys, but aws-sagemaker (gpu, step_run only) does not: the
    request used to pass validate there and overflow the plan (exit 3)."""
    Path("examples/pipelines/huge.yaml").write_text(
        "apiVersion: poolc/v1\nkind: Pipeline\nmetadata: {name: huge}\nspec:\n  stack: research-stack\n"
        f"  steps:\n    big: {{settings: {{resources: {{{settings}}}}}}}\n", encoding="utf-8")
    Path("examples/policies/research-unmetered.yaml").write_text(
        "apiVersion: poolc/v1\nkind: Policy\nmetadata: {name: research-unmetered}\n"
        "spec: {subject: research-k8s, pool: aws-sagemaker}\n", encoding="utf-8")
    validated = poolc("validate", "examples", cwd=platform)
    assert validated.returncode == 1 and "error[R001]" in validated.stdout
    for strategy in ("optimal", "zenml"):
        # R001 is an error in the configuration, not the step's own rejection: no plan, the diagnostic instead
        plan = poolc("plan", "examples", "--strategy", strategy, "--format", "json", cwd=platform)
        assert plan.returncode == 1, plan.stderr
        assert list(json.loads(plan.stdout)) == ["diagnostics"]
        assert any(d["rule"] == "R001" and d["file"] == "examples/pipelines/huge.yaml" and d["line"] == 7
                   and f"sets {field}=" in d["message"] and "10^12" in d["message"]
                   for d in json.loads(plan.stdout)["diagnostics"])
