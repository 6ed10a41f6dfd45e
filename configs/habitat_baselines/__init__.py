"""habitat-ver's Hydra config groups (a regular package: Python 3.9's
importlib.resources, which Hydra uses, cannot open namespace packages)."""
