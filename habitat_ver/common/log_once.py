"""One log line per process for a message that every trainer start would repeat."""

from typing import Set

from habitat import logger

_logged: Set[str] = set()


def log_once(message: str) -> None:
    """Log ``message`` at INFO the first time this process sees it."""
    if message not in _logged:
        _logged.add(message)
        logger.info(message)
