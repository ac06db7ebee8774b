#!/usr/bin/env python3
"""Proves that fp4fuse can be consumed each way docs/CONSUMING.md describes.

usage: consumers.py CHECK --source-root DIR --nvcc NVCC [--cmake CMAKE] [--pkg-config PKG_CONFIG]

CHECK is one of
  install-tree      `meson install` with -Dprefix= and with --destdir installs exactly the public
                    headers, fp4fuse.pc, the two CMake package files and LICENSE; their contents
                    carry the version from VERSION
  pkg-config        a clean install, then `nvcc $(pkg-config --cflags fp4fuse)` builds and runs
                    tests/consumers/consumer.cu against it
  cmake             a clean install, then a CMake CUDA project finds it with find_package(fp4fuse)
                    and links fp4fuse::fp4fuse (an incompatible version request must fail)
  meson-subproject  a Meson project with subprojects/fp4fuse gets it from dependency('fp4fuse'),
                    and fp4fuse builds no tests, examples or benchmarks of its own
  vendored          include/fp4fuse copied into another tree builds with plain `nvcc -std=c++17 -I`
  docs              scripts/docs.sh (Doxygen) passes on the headers, and fails on a copy of them with
                    one undocumented public function (warnings are errors)

Every consumer is built in a fresh temporary directory (kept, and named, on failure) for
-gencode arch=compute_90a,code=sm_90a, and run: its host path works without a GPU. Each command
is printed before it runs; a failing one is reported with its full output.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

GENCODE = ["-gencode", "arch=compute_90a,code=sm_90a"]
HERE = os.path.dirname(os.path.abspath(__file__))
CONSUMER_SOURCE = os.path.join(HERE, "consumer.cu")


class CheckFailed(Exception):
    pass


def run(cmd, cwd=None, env=None, expect_ok=True):
    """Runs cmd, prints it, and returns (returncode, combined output). Raises on an unexpected status."""
    print("$ " + " ".join(cmd) + (f"    (in {cwd})" if cwd else ""), flush=True)
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.run(cmd, cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if expect_ok and proc.returncode != 0:
        raise CheckFailed(f"command failed with exit status {proc.returncode}: {' '.join(cmd)}\n"
                          f"----- output -----\n{proc.stdout}------------------")
    return proc.returncode, proc.stdout


def require(cond, message, details=""):
    if not cond:
        raise CheckFailed(message + (f"\n{details}" if details else ""))
    print(f"ok   {message}", flush=True)


def meson_command():
    if os.environ.get("FP4FUSE_MESON"):
        return os.environ["FP4FUSE_MESON"].split()
    found = shutil.which("meson")
    if found:
        return [found]
    return [sys.executable, "-m", "mesonbuild.mesonmain"]


def read_version(root):
    with open(os.path.join(root, "VERSION")) as f:
        return f.read().strip()


def files_under(top):
    """Relative paths of every non-directory entry under top, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            out.append(os.path.relpath(os.path.join(dirpath, name), top))
    return sorted(out)


def install_dirs(build):
    """prefix, includedir, libdir, datadir of a configured Meson build (the last three relative)."""
    _, out = run(meson_command() + ["introspect", "--buildoptions", build])
    opts = {o["name"]: o["value"] for o in json.loads(out)}
    return opts["prefix"], opts["includedir"], opts["libdir"], opts["datadir"]


def setup_and_install(args, work, destdir=None):
    """Configures fp4fuse alone (no tests, examples or benchmarks) with -Dprefix=work/prefix and installs it."""
    prefix = os.path.join(work, "prefix")
    build = os.path.join(work, "fp4fuse-build")
    run(meson_command() + ["setup", build, args.source_root, f"-Dprefix={prefix}", "-Dtests=disabled",
                           "-Dexamples=false", "-Dbench=false"])
    cmd = meson_command() + ["install", "-C", build]
    if destdir:
        cmd += ["--destdir", destdir]
    run(cmd)
    return build, prefix


def expected_install(root, includedir, libdir, datadir):
    headers = files_under(os.path.join(root, "include", "fp4fuse"))
    expected = [os.path.join(includedir, "fp4fuse", h) for h in headers]
    expected += [os.path.join(libdir, "pkgconfig", "fp4fuse.pc"),
                 os.path.join(libdir, "cmake", "fp4fuse", "fp4fuseConfig.cmake"),
                 os.path.join(libdir, "cmake", "fp4fuse", "fp4fuseConfigVersion.cmake"),
                 os.path.join(datadir, "licenses", "fp4fuse", "LICENSE")]
    return headers, sorted(expected)


def compare_trees(actual, expected, where):
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    require(not missing and not extra, f"{where} holds exactly the {len(expected)} expected files",
            "missing:\n  " + "\n  ".join(missing or ["(none)"]) + "\nunexpected:\n  " + "\n  ".join(extra or ["(none)"]))


def fp4fuse_headers_used(nvcc, cflags, source, cwd):
    """The fp4fuse headers a compile of source reads (from nvcc -M)."""
    _, deps = run([nvcc] + cflags + GENCODE + ["-M", source], cwd=cwd)
    paths = deps.replace("\\\n", " ").split()
    return [p for p in paths if "/fp4fuse/" in p and p.endswith((".cuh", ".hpp"))]


def require_headers_from(nvcc, cflags, source, cwd, tree):
    used = fp4fuse_headers_used(nvcc, cflags, source, cwd)
    tree = os.path.realpath(tree)
    outside = [p for p in used if not os.path.realpath(os.path.join(cwd, p)).startswith(tree + os.sep)]
    require(used and not outside, f"all {len(used)} fp4fuse headers the consumer reads come from {tree}",
            "read from elsewhere:\n  " + "\n  ".join(outside))


def run_consumer(exe, label):
    _, out = run([exe, label])
    print(out, end="", flush=True)
    require(f"{label}: fp4fuse " in out, f"{label} consumer ran and printed its results")


# ----------------------------------------------------------------------------------------------

def check_install_tree(args, work):
    version = read_version(args.source_root)
    build, prefix = setup_and_install(args, work)
    _, includedir, libdir, datadir = install_dirs(build)
    print(f"install layout: includedir={includedir} libdir={libdir} datadir={datadir}")
    headers, expected = expected_install(args.source_root, includedir, libdir, datadir)
    bad = [h for h in headers if not h.endswith((".cuh", ".hpp"))]
    require(not bad, f"include/fp4fuse holds only headers ({len(headers)} .cuh/.hpp files)", "\n".join(bad))
    compare_trees(files_under(prefix), expected, f"-Dprefix={prefix}")

    # The same build staged with --destdir: the same files under DESTDIR/prefix, nothing elsewhere.
    stage = os.path.join(work, "stage")
    run(meson_command() + ["install", "-C", build, "--destdir", stage])
    staged = files_under(stage)
    rel_prefix = os.path.relpath(prefix, "/")
    compare_trees(staged, [os.path.join(rel_prefix, e) for e in expected], f"--destdir={stage}")

    mismatched = []
    for rel in headers:
        with open(os.path.join(args.source_root, "include", "fp4fuse", rel), "rb") as a, \
                open(os.path.join(prefix, includedir, "fp4fuse", rel), "rb") as b:
            if a.read() != b.read():
                mismatched.append(rel)
    require(not mismatched, "every installed header is byte-identical to its source", "\n".join(mismatched))

    with open(os.path.join(prefix, libdir, "pkgconfig", "fp4fuse.pc")) as f:
        pc = f.read()
    require(f"Version: {version}" in pc and "-std=c++17" in pc and "-I${includedir}" in pc,
            f"fp4fuse.pc: Version {version}, Cflags -I${{includedir}} -std=c++17", pc)
    with open(os.path.join(prefix, libdir, "cmake", "fp4fuse", "fp4fuseConfigVersion.cmake")) as f:
        cv = f.read()
    require(f'set(PACKAGE_VERSION "{version}")' in cv, f"fp4fuseConfigVersion.cmake says {version}")
    with open(os.path.join(prefix, libdir, "cmake", "fp4fuse", "fp4fuseConfig.cmake")) as f:
        cfg = f.read()
    require("@" not in cfg and "fp4fuse::fp4fuse" in cfg and
            "find_dependency(CUDAToolkit" in cfg and prefix not in cfg,
            "fp4fuseConfig.cmake is fully configured, relocatable and defines fp4fuse::fp4fuse")
    with open(os.path.join(args.source_root, "LICENSE"), "rb") as a, \
            open(os.path.join(prefix, datadir, "licenses", "fp4fuse", "LICENSE"), "rb") as b:
        require(a.read() == b.read(), "LICENSE installed unchanged")


def check_pkg_config(args, work):
    version = read_version(args.source_root)
    build, prefix = setup_and_install(args, work)
    _, _, libdir, _ = install_dirs(build)
    env = {"PKG_CONFIG_PATH": os.path.join(prefix, libdir, "pkgconfig")}
    _, modversion = run([args.pkg_config, "--modversion", "fp4fuse"], env=env)
    require(modversion.strip() == version, f"pkg-config --modversion fp4fuse is {version}", modversion)
    run([args.pkg_config, "--exists", "--print-errors", f"fp4fuse >= {version}"], env=env)
    _, cflags = run([args.pkg_config, "--cflags", "fp4fuse"], env=env)
    cflags = cflags.split()
    print("pkg-config --cflags fp4fuse: " + " ".join(cflags))
    app = os.path.join(work, "app")
    os.makedirs(app)
    shutil.copy(CONSUMER_SOURCE, os.path.join(app, "main.cu"))
    run([args.nvcc] + cflags + GENCODE + ["main.cu", "-o", "consumer"], cwd=app)
    require_headers_from(args.nvcc, cflags, "main.cu", app, prefix)
    run_consumer(os.path.join(app, "consumer"), "pkg-config")


CMAKELISTS = """cmake_minimum_required(VERSION 3.18)
project(fp4fuse_cmake_consumer LANGUAGES CUDA)

# The version file must refuse what this install cannot satisfy.
find_package(fp4fuse 99 QUIET)
if(fp4fuse_FOUND)
  message(FATAL_ERROR "find_package(fp4fuse 99) accepted version ${{fp4fuse_VERSION}}")
endif()

find_package(fp4fuse {version} REQUIRED)
message(STATUS "consumer: fp4fuse ${{fp4fuse_VERSION}} from ${{fp4fuse_DIR}}")
if(NOT TARGET fp4fuse::fp4fuse)
  message(FATAL_ERROR "fp4fuse::fp4fuse is not defined")
endif()
get_target_property(_features fp4fuse::fp4fuse INTERFACE_COMPILE_FEATURES)
message(STATUS "consumer: fp4fuse::fp4fuse compile features: ${{_features}}")

add_executable(consumer main.cu)
target_link_libraries(consumer PRIVATE fp4fuse::fp4fuse)
set_target_properties(consumer PROPERTIES CUDA_ARCHITECTURES 90a)
"""


def check_cmake(args, work):
    version = read_version(args.source_root)
    _, prefix = setup_and_install(args, work)
    app = os.path.join(work, "app")
    os.makedirs(app)
    shutil.copy(CONSUMER_SOURCE, os.path.join(app, "main.cu"))
    with open(os.path.join(app, "CMakeLists.txt"), "w") as f:
        f.write(CMAKELISTS.format(version=version))
    build = os.path.join(app, "build")
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    _, out = run([args.cmake, "-S", app, "-B", build] + generator +
                 [f"-DCMAKE_CUDA_COMPILER={args.nvcc}", f"-DCMAKE_PREFIX_PATH={prefix}",
                  "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", "-DCMAKE_BUILD_TYPE=Release"])
    print("\n".join(l for l in out.splitlines() if "consumer:" in l or "CUDAToolkit" in l))
    require(f"consumer: fp4fuse {version} from {prefix}" in out, f"find_package(fp4fuse {version}) found the install in {prefix}", out)
    require("cxx_std_17" in out and "cuda_std_17" in out, "fp4fuse::fp4fuse requires cxx_std_17 and cuda_std_17")
    run([args.cmake, "--build", build, "--verbose"])
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = " ".join(c["command"] for c in json.load(f))
    inc = os.path.join(prefix, "include")
    require(inc in commands and os.path.join(args.source_root, "include") not in commands,
            f"the compile line has {inc} and not the source tree's include/", commands)
    run_consumer(os.path.join(build, "consumer"), "cmake")


MESON_CONSUMER = """project('fp4fuse_meson_consumer', 'cuda', default_options: ['cuda_std=c++17'])
fp4fuse_dep = dependency('fp4fuse', version: '>= {version}')
executable('consumer', 'main.cu', dependencies: fp4fuse_dep, cuda_args: {gencode})
"""


def check_meson_subproject(args, work):
    version = read_version(args.source_root)
    app = os.path.join(work, "app")
    os.makedirs(os.path.join(app, "subprojects"))
    os.symlink(args.source_root, os.path.join(app, "subprojects", "fp4fuse"))
    shutil.copy(CONSUMER_SOURCE, os.path.join(app, "main.cu"))
    with open(os.path.join(app, "meson.build"), "w") as f:
        f.write(MESON_CONSUMER.format(version=version, gencode=repr(GENCODE)))
    print(f"consumer project {app}: subprojects/fp4fuse -> {args.source_root}")
    build = os.path.join(app, "build")
    # --force-fallback-for: use the subproject even where an fp4fuse is installed on the system.
    _, out = run(meson_command() + ["setup", build, app, "--force-fallback-for=fp4fuse"])
    require("Executing subproject fp4fuse" in out, "dependency('fp4fuse') configured subprojects/fp4fuse", out)
    require(re.search(rf"Dependency fp4fuse (for host machine )?found: YES {re.escape(version)}", out),
            f"dependency('fp4fuse') found version {version}", out)
    require("catch2" not in out.lower(), "the subproject did not look for Catch2 (its tests are off)", out)
    _, targets = run(meson_command() + ["introspect", "--targets", build])
    foreign = [t["name"] for t in json.loads(targets) if t.get("subproject")]
    require(not foreign, "the subproject defines no targets (no tests, examples or benchmarks)", "\n".join(foreign))
    _, tests = run(meson_command() + ["introspect", "--tests", build])
    require(json.loads(tests) == [], "the consumer build has no tests from fp4fuse", tests)
    run(meson_command() + ["compile", "-C", build])
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = " ".join(c["command"] for c in json.load(f))
    require("subprojects/fp4fuse/include" in commands, "the compile line includes subprojects/fp4fuse/include", commands)
    run_consumer(os.path.join(build, "consumer"), "meson-subproject")


def check_vendored(args, work):
    app = os.path.join(work, "app")
    vendor = os.path.join(app, "third_party", "fp4fuse")
    shutil.copytree(os.path.join(args.source_root, "include", "fp4fuse"), os.path.join(vendor, "fp4fuse"))
    print(f"copied include/fp4fuse to {vendor}/fp4fuse ({len(files_under(vendor))} files)")
    shutil.copy(CONSUMER_SOURCE, os.path.join(app, "main.cu"))
    cflags = ["-std=c++17", "-I", "third_party/fp4fuse"]
    run([args.nvcc] + cflags + GENCODE + ["main.cu", "-o", "consumer"], cwd=app)
    require_headers_from(args.nvcc, cflags, "main.cu", app, vendor)
    run_consumer(os.path.join(app, "consumer"), "vendored")


def check_docs(args, work):
    script = os.path.join(args.source_root, "scripts", "docs.sh")
    out_dir = os.path.join(work, "docs")
    _, out = run([script, out_dir])
    print(out, end="")
    index = os.path.join(out_dir, "html", "index.html")
    require(os.path.isfile(index), f"Doxygen wrote {index} without a warning")
    pages = os.listdir(os.path.join(out_dir, "html"))
    require(not any("detail" in p for p in pages), "no page documents fp4fuse::detail or include/fp4fuse/detail")

    # The same configuration on a copy with one undocumented public function must fail.
    copy = os.path.join(work, "undocumented")
    for d in ("include", "docs", "scripts"):
        shutil.copytree(os.path.join(args.source_root, d), os.path.join(copy, d))
    shutil.copy(os.path.join(args.source_root, "VERSION"), copy)
    with open(os.path.join(copy, "include", "fp4fuse", "recipe.cuh"), "a") as f:
        f.write("\nnamespace fp4fuse {\ninline int fp4fuse_undocumented_probe(int x) { return x; }\n}  // namespace fp4fuse\n")
    status, out = run([os.path.join(copy, "scripts", "docs.sh"), os.path.join(work, "docs-undocumented")],
                      expect_ok=False)
    print(out, end="")
    require(status != 0 and "fp4fuse_undocumented_probe" in out and "not documented" in out,
            "an undocumented public function fails the docs build (warnings are errors)", out)


CHECKS = {
    "install-tree": check_install_tree,
    "pkg-config": check_pkg_config,
    "cmake": check_cmake,
    "meson-subproject": check_meson_subproject,
    "vendored": check_vendored,
    "docs": check_docs,
}
TOOLS = {"pkg-config": "pkg_config", "cmake": "cmake"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("check", choices=sorted(CHECKS))
    parser.add_argument("--source-root", required=True)
    parser.add_argument("--nvcc", required=True)
    parser.add_argument("--cmake", default=shutil.which("cmake") or "")
    parser.add_argument("--pkg-config", default=shutil.which("pkg-config") or "")
    args = parser.parse_args()
    args.source_root = os.path.realpath(args.source_root)
    nvcc = shutil.which(args.nvcc)
    if not nvcc:
        print(f"FAIL {args.check}: nvcc `{args.nvcc}` not found")
        return 1
    args.nvcc = os.path.abspath(nvcc)
    # The Meson and CMake builds below find the same nvcc as the one given.
    os.environ["PATH"] = os.path.dirname(args.nvcc) + os.pathsep + os.environ.get("PATH", "")

    tool = TOOLS.get(args.check)
    if tool and not getattr(args, tool):
        print(f"FAIL {args.check}: `{args.check}` is not installed (apt-get install {args.check})")
        return 1

    work = tempfile.mkdtemp(prefix=f"fp4fuse-{args.check}-")
    print(f"== {args.check}: working in {work}", flush=True)
    try:
        CHECKS[args.check](args, work)
    except CheckFailed as e:
        print(f"FAIL {args.check}: {e}")
        print(f"(files kept in {work})")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print(f"PASS {args.check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
