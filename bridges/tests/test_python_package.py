#!/usr/bin/env python3
"""`pip install ./bridges/python` into a scratch directory works, and fp4fuse.bitcode from there
maps architectures to targets, finds files through FP4FUSE_BITCODE_DIR and fails with sentences."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


with tempfile.TemporaryDirectory() as tmp:
    target = os.path.join(tmp, "site")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
                        "--disable-pip-version-check", "--target", target, os.path.join(ROOT, "bridges", "python")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(r.returncode == 0, f"pip install ./bridges/python failed:\n{r.stdout}")
    probe = r"""
import os, sys, json
import fp4fuse, fp4fuse.bitcode as b
out = {"file": fp4fuse.__file__, "version": fp4fuse.__version__}
out["targets"] = {a: b.target_for_arch(a) for a in ["sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_100f", "sm_103a", "sm_110a", "sm_120", "sm_120a", "sm_121a", "compute_90a", "sm90a"]}
out["ints"] = {str(a): b.target_for_arch(a) for a in [80, 89, 90, 100, 103, 120, 121]}
errs = {}
for bad in ["sm_75", "gfx90a", "sm_130a"]:
    try:
        b.target_for_arch(bad); errs[bad] = None
    except ValueError as e:
        errs[bad] = str(e)
out["errors"] = errs
os.environ["FP4FUSE_BITCODE_DIR"] = sys.argv[1]
try:
    b.bitcode_path("sm_100a"); out["missing"] = None
except FileNotFoundError as e:
    out["missing"] = str(e)
out["n_symbols"] = len(b.symbols())
print(json.dumps(out))
"""
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    env = dict(os.environ, PYTHONPATH=target)
    r = subprocess.run([sys.executable, "-c", probe, empty], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=env, cwd=tmp)
    check(r.returncode == 0, f"importing the installed package failed:\n{r.stdout}")
    if r.returncode == 0:
        import json

        out = json.loads(r.stdout.strip().splitlines()[-1])
        check(out["file"].startswith(target), f"fp4fuse was imported from {out['file']}, not the installed copy")
        want = {"sm_80": "sm80", "sm_86": "sm80", "sm_89": "sm90a", "sm_90": "sm90a", "sm_90a": "sm90a", "sm_100": "sm90a",
                "sm_100a": "sm100a", "sm_100f": "sm100a", "sm_103a": "sm100a", "sm_110a": "sm100a", "sm_120": "sm90a",
                "sm_120a": "sm120a", "sm_121a": "sm120a", "compute_90a": "sm90a", "sm90a": "sm90a"}
        check(out["targets"] == want, f"target_for_arch: got {out['targets']}, want {want}")
        wi = {"80": "sm80", "89": "sm90a", "90": "sm90a", "100": "sm100a", "103": "sm100a", "120": "sm120a", "121": "sm120a"}
        check(out["ints"] == wi, f"target_for_arch(int): got {out['ints']}, want {wi}")
        for bad, msg in out["errors"].items():
            check(msg is not None and bad in msg, f"target_for_arch({bad!r}) did not fail with a sentence naming it: {msg}")
        m = out["missing"]
        check(m is not None and "fp4fuse_sm100a.bc" in m and "FP4FUSE_BITCODE_DIR" in m and "meson compile" in m,
              f"a missing bitcode file did not fail with a sentence naming the file and the fix: {m}")
        sys.path.insert(0, os.path.join(ROOT, "bridges", "c_abi"))
        import abi_table

        check(out["n_symbols"] == len(abi_table.parse()), "the installed package's symbol table differs from fp4fuse_c.h")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("python package: pip install, arch -> target for 22 architectures, 3 bad architectures and a missing file fail with sentences")
