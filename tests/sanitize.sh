#!/usr/bin/env bash
# usage: sanitize.sh TOOL TEST_EXECUTABLE [catch2 filter...]
# Runs a test executable's GPU cases under compute-sanitizer; SKIP (77) without the tool or a GPU.
tool=$1; exe=$2; shift 2
cs=$(command -v compute-sanitizer || true)
[ -z "$cs" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && cs=/usr/local/cuda/bin/compute-sanitizer
if [ -z "$cs" ]; then echo "SKIP: compute-sanitizer is not installed"; exit 77; fi
"$exe" --gpu --list-tests >/dev/null 2>&1
if [ $? = 77 ]; then echo "SKIP: no CUDA device"; exit 77; fi
exec "$cs" --tool "$tool" --error-exitcode 99 --print-limit 20 "$exe" --gpu "$@"
