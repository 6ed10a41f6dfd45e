#!/usr/bin/env bash
# Install habitat-sim from a local wheel into the project's venv (make install/test).
#   .ci/install_habitat_sim.sh <python of the venv> <folder holding habitat_sim-*.whl>
# Does nothing when the folder has no wheel (a user's fresh clone) or when a
# habitat-sim is already importable (a user's own conda build is kept).  Installs the
# Debian runtime libraries the wheel links against (apt-get; root on CI), skipping
# apt when they are all present.
set -euo pipefail
PY=$1
DIR=$2
WHEEL=$(ls "$DIR"/habitat_sim-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$WHEEL" ]; then
    echo "habitat-sim: no wheel in $DIR; simulator tests will be skipped"
    exit 0
fi
if "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('habitat_sim') is None)"; then
    echo "habitat-sim: already importable in $PY; kept as it is"
    exit 0
fi
LIBS="libassimp5 libzstd1 libegl1 libopengl0 libgl1-mesa-dri libegl-mesa0"
missing=""
for lib in $LIBS; do
    dpkg-query -W -f='${Status}' "$lib" 2>/dev/null | grep -q "install ok installed" || missing="$missing $lib"
done
if [ -n "$missing" ]; then
    echo "habitat-sim: installing runtime libraries:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi
"$PY" -m pip install --quiet "$WHEEL"
