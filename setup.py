"""Only the C extension; everything else about the package is in pyproject.toml.

proto._crecords holds the producer's and the consumer's record loops in C. It is optional: where
it cannot be built (no compiler, no Python headers) the install goes on and proto.records runs
its own Python code.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "proto._crecords",
            sources=["proto/_crecords.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
