#!/usr/bin/env bash
# Builds and runs the main example (examples/quickstart.cu). Without a GPU it runs the host path
# and says so. Arguments go to the example: [M] [K] [I].
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

build=build/example
if [ ! -d "$build" ]; then
  meson setup "$build" -Dtests=disabled -Dbench=false
fi
meson compile -C "$build" quickstart
"$build/examples/quickstart" "$@"
