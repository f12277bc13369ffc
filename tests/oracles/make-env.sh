#!/bin/sh
# Builds the test-only environment whose zenml and flytekit are the oracles of
# tests/test_zenml_oracle.py and tests/test_flyte_oracle.py (poolc never imports them):
#
#   sh tests/oracles/make-env.sh /tmp/poolc-oracles
#   POOLC_ZENML_PYTHON=/tmp/poolc-oracles/zenml/bin/python \
#   POOLC_FLYTE_PYTHON=/tmp/poolc-oracles/flyte/bin/python \
#       .venv/bin/python -m pytest -q tests/test_zenml_oracle.py tests/test_flyte_oracle.py
#
# Without those variables the oracle tests skip (CI does not build these environments).
set -eu
root=${1:-/tmp/poolc-oracles}
python3 -m venv "$root/zenml"
"$root/zenml/bin/pip" install -q "zenml[local]==0.98.0"
python3 -m venv "$root/flyte"
"$root/flyte/bin/pip" install -q "flytekit>=1.16,<2" "flyte>=2,<3" kubernetes
echo "POOLC_ZENML_PYTHON=$root/zenml/bin/python POOLC_FLYTE_PYTHON=$root/flyte/bin/python"
