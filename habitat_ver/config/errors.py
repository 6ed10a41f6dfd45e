"""The error every config check raises: one line naming key, value and what is allowed.

Its own module so that the checks spread over ``config/`` (validate, embedded
envs, HAB data, stored and upstream configs) import it without importing
each other.
"""


class ConfigError(ValueError):
    """A config value that habitat-ver cannot run with."""
