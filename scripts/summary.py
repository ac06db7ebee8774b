#!/usr/bin/env python3
"""Prints one closing line from Meson's testlog.json: 'tests: N passed, N failed, N skipped'."""
import json
import sys

passed = failed = skipped = 0
with open(sys.argv[1]) as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        result = json.loads(line).get("result", "")
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
