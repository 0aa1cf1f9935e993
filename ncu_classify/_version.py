"""The tool's version, in one place: pyproject reads it (setuptools `attr:`), every step imports
it from here, so that no step stands on the package face and a checkout run without install
(`PYTHONPATH=.` on the GPU host) reports the same version as an installed wheel."""

__version__ = "0.1.0"
