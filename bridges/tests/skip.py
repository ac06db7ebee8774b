#!/usr/bin/env python3
"""Reports a bridges test as skipped (exit 77) with the sentence given, for the test summary."""
import sys

print(" ".join(sys.argv[1:]))
sys.exit(77)
