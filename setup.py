"""The one build step pyproject.toml cannot say: compile libnnengine.so with
the project's Makefile and put it inside the package, where
nn_engine/_lib.py looks first."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        build = os.path.join(ROOT, "build")
        jobs = str(min(os.cpu_count() or 1, 4))
        try:
            subprocess.run(["make", "-j" + jobs, "BUILD=" + build, "lib"], cwd=ROOT, check=True)
        except (OSError, subprocess.CalledProcessError) as err:
            raise SystemExit(f"nn_engine: building libnnengine.so with `make lib` failed ({err}); "
                             "the messages above say why. `make deps` (as root) installs the "
                             "Debian packages the build needs (compiler, OpenBLAS, zlib, image "
                             "libraries)")
        target = os.path.join(self.build_lib, "nn_engine")
        os.makedirs(target, exist_ok=True)
        shutil.copy2(os.path.join(build, "libnnengine.so"), target)


class BinaryDistribution(Distribution):
    """The wheel holds a compiled library: tag it for this platform."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
