"""The optional compiled hot path of a wrapped span (stagebench/_fast.c).
Where it cannot be built (no C compiler, no Python headers) the helper
installs without it and does the same steps in Python."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("stagebench._fast", ["stagebench/_fast.c"], optional=True)])
