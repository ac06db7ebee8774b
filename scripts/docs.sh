#!/usr/bin/env bash
# Builds the HTML API reference of the public headers with Doxygen (docs/Doxyfile) into
# OUTPUT_DIR (default: build/docs; the pages are in OUTPUT_DIR/html). Every Doxygen warning, an
# undocumented public function, class, member or macro included, makes it fail.
#
#   scripts/docs.sh [OUTPUT_DIR]          (also: meson compile -C <build> docs)
#
# Installs Doxygen with apt-get when it is missing (needs root or sudo).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build/docs}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

if ! command -v doxygen >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "fp4fuse: please install Doxygen 1.9 or newer" >&2; exit 1
  fi
  SUDO=""
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq doxygen >/dev/null
fi
version="$(doxygen --version | cut -d' ' -f1)"
case "$version" in
  0.*|1.[0-8].*) echo "fp4fuse: Doxygen $version is too old; docs/Doxyfile needs 1.9 or newer" >&2; exit 1 ;;
esac

cd "$root"
echo "fp4fuse: Doxygen $version: include/fp4fuse -> $out/html (warnings are errors)"
status=0
{ cat docs/Doxyfile
  echo "OUTPUT_DIRECTORY = \"$out\""
  echo "PROJECT_NUMBER = \"$(tr -d '[:space:]' < VERSION)\""
} | doxygen - || status=$?
if [ "$status" != 0 ]; then
  echo "fp4fuse: Doxygen failed (exit $status): document every item it lists above" >&2
  exit "$status"
fi
echo "fp4fuse: API reference written to $out/html/index.html"
