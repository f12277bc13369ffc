"""Steps a Pipeline takes from the files ML engineers already have (``spec.source``).

One module per front end: ``zenml_config`` (a ZenML run configuration YAML),
``zenml_code`` (ZenML ``@step``/``@pipeline`` decorators) and ``flyte`` (flytekit
1.x and flyte 2 tasks). Python is read with ``ast`` and never imported or run, so a
pre-commit hook can read untrusted code. ``precedence`` merges what they find as
ZenML does, and ``resolve`` turns it into the steps of an ordinary Pipeline whose
diagnostics point into the file where each value was written (docs/format.md#reading-your-zenml-and-flyte-code).
"""
