"""stagebench as one wheel (pyproject.toml says what it holds).

`pip install .` and `pip wheel . -w dist` run this from a checkout:
1. cargo builds `coordinator` and `worker` (release, `--locked`) into the
   workspace's target/ (or CARGO_TARGET_DIR), so a second build reuses the
   first; their debug line tables are stripped for the wheel;
2. the two binaries go to the environment's bin/ (the wheel's scripts),
   where the coordinator looks for its worker: next to itself;
3. the helper's package is python/stagebench, the one source the worker
   also embeds, with its optional compiled fast path (_fast.c);
4. the wheel is tagged `manylinux_2_Y_ARCH`, Y the newest glibc symbol
   version any of its ELF files needs, when every library they link is
   one the manylinux policy allows (glibc's, libgcc_s); else `linux_ARCH`,
   with a warning. `auditwheel show` checks the same (tests/tests/wheel.rs).

The version is the workspace's (Cargo.toml), so the wheel, `coordinator
--version` and `stagebench.__version__` cannot disagree (a test holds the
helper's to it).
"""

import os
import platform
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build import build

# After setuptools, which provides distutils (Python 3.12 has none).
from distutils.command.build_scripts import build_scripts  # noqa: E402

ROOT = os.path.dirname(os.path.abspath(__file__))
BINARIES = ("coordinator", "worker")
STAGED = os.path.join("build", "stagebench-bin")
# What a manylinux wheel may link without carrying it (PEP 600's policy:
# glibc's own libraries and libgcc_s).
ALLOWED = {
    "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
    "libgcc_s.so.1", "libutil.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
}


def version():
    with open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("[workspace.package]", 1)[1]
    return re.search(r'^version\s*=\s*"([^"]+)"', section, re.M).group(1)


def fail(message):
    sys.stderr.write(f"stagebench: {message}\n")
    raise SystemExit(1)


class build_with_cargo(build):
    """cargo's two binaries first, stripped into build/stagebench-bin, then
    setuptools' own steps (the package, the fast path, the scripts)."""

    def run(self):
        cargo = shutil.which("cargo")
        if cargo is None:
            fail(
                "building from source needs Rust's cargo on PATH (https://rustup.rs); "
                "or install a built wheel (pip wheel . -w dist on a machine with Rust)"
            )
        target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
        args = [cargo, "build", "--release", "--locked", "--target-dir", target]
        for b in BINARIES:
            args += ["-p", f"stagebench-{b}"]
        print("stagebench: " + " ".join(args[1:]), flush=True)
        if subprocess.run(args, cwd=ROOT).returncode != 0:
            fail("cargo build failed (its output is above)")
        os.makedirs(os.path.join(ROOT, STAGED), exist_ok=True)
        strip = shutil.which("strip")
        for b in BINARIES:
            built, staged = os.path.join(target, "release", b), os.path.join(ROOT, STAGED, b)
            if strip and subprocess.run([strip, "--strip-debug", "-o", staged, built]).returncode == 0:
                continue
            shutil.copy2(built, staged)
        super().run()


class copy_binaries(build_scripts):
    """The scripts are the two binaries: copied as they are (setuptools
    reads a script's first line as Python source to rewrite its shebang)."""

    def run(self):
        self.mkpath(self.build_dir)
        for script in self.scripts:
            out = os.path.join(self.build_dir, os.path.basename(script))
            self.copy_file(script, out)
            os.chmod(out, 0o755)


def elf_files(tree):
    for folder, _, names in os.walk(tree):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    yield path


def manylinux(tree):
    """The manylinux tag the ELF files under `tree` allow, or None (and
    why) where a tool is missing or a library is outside the policy."""
    readelf = shutil.which("readelf")
    if readelf is None:
        return None, "no readelf on PATH"
    newest = (2, 17)
    for path in elf_files(tree):
        out = subprocess.run([readelf, "-dV", "--wide", path], capture_output=True, text=True)
        if out.returncode != 0:
            return None, f"readelf could not read {os.path.basename(path)}"
        for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out.stdout):
            if lib not in ALLOWED:
                return None, f"{os.path.basename(path)} links {lib}, which manylinux does not allow"
        for major, minor in re.findall(r"Name: GLIBC_(\d+)\.(\d+)", out.stdout):
            newest = max(newest, (int(major), int(minor)))
    return f"manylinux_{newest[0]}_{newest[1]}_{platform.machine()}", None


class bdist_manylinux(bdist_wheel):
    """A platform wheel (it holds binaries, whether or not the fast path
    built), tagged with the glibc it needs."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        impl, abi, plat = super().get_tag()
        if not plat.startswith("linux_"):
            return impl, abi, plat
        tag, why = manylinux(self.bdist_dir)
        if tag is None:
            sys.stderr.write(f"stagebench: warning: the wheel stays {plat}: {why}\n")
            return impl, abi, plat
        return impl, abi, tag


setup(
    version=version(),
    scripts=[os.path.join(STAGED, b) for b in BINARIES],
    ext_modules=[Extension("stagebench._fast", ["python/stagebench/_fast.c"], optional=True)],
    cmdclass={"build": build_with_cargo, "build_scripts": copy_binaries, "bdist_wheel": bdist_manylinux},
)
