"""Package layout that pyproject.toml alone cannot express.

The Hydra config tree sits at the top of the repository in ``configs/`` (the
layout the product fixes) and is shipped inside the wheel as the package
``habitat_ver_configs``, which the Hydra search-path plugin resolves.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["habitat_ver", "habitat_ver.*"])
    + [
        "hydra_plugins.habitat_ver_plugin",
        "habitat_ver_configs",
        "habitat_ver_configs.habitat_baselines",
    ],
    package_dir={"habitat_ver_configs": "configs"},
)
