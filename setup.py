"""The package layout and the C extension; the rest of the distribution is in pyproject.toml.

The repository keeps one folder per part at its top (proto/, broker/, controller/, zk/,
client/, spark_jobs/), and all of them install under the one import package ``minikafka``:
setuptools' package-dir mapping puts ``proto/`` at ``minikafka.proto``, ``spark_jobs/`` at
``minikafka.spark`` and so on, so a wheel has ``minikafka`` alone at the top of site-packages.

minikafka.proto._crecords holds the producer's and the consumer's record loops in C. It is
optional: where it cannot be built (no compiler, no Python headers) the install goes on and
minikafka.proto.records runs its own Python code.
"""

from pathlib import Path

from setuptools import Extension, find_packages, setup

# import package -> folder in the repository
PACKAGE_DIRS = {
    "minikafka": "minikafka",
    "minikafka.proto": "proto",
    "minikafka.broker": "broker",
    "minikafka.controller": "controller",
    "minikafka.zk": "zk",
    "minikafka.client": "client",
    "minikafka.spark": "spark_jobs",
}


def packages() -> list[str]:
    found = []
    for package, folder in PACKAGE_DIRS.items():
        found.append(package)
        found += [f"{package}.{sub}" for sub in find_packages(folder)]
    return found


def package_dirs() -> dict[str, str]:
    # Subpackages need no entry: setuptools finds minikafka.broker.storage under broker/.
    return {package: folder for package, folder in PACKAGE_DIRS.items() if Path(folder).is_dir()}


setup(
    packages=packages(),
    package_dir=package_dirs(),
    ext_modules=[
        Extension(
            "minikafka.proto._crecords",
            sources=["proto/_crecords.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ],
)
