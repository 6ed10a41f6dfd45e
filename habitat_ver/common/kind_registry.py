"""A name -> builder table whose entries name the trainer kinds that run them.

Preemption rules (:mod:`habitat_ver.distributed.preemption_rule`) and return
estimators (:mod:`habitat_ver.updaters.targets`) are both chosen by a config
name among those registered for the trainer's kind (``TRAINER_KIND``); each
module keeps one :class:`KindRegistry`.  For an estimator, ``auto`` is the
first one registered for the kind (:meth:`KindRegistry.resolve`); for a
preemption rule it is the trainer's ``DEFAULT_PREEMPTION``.
"""

from dataclasses import dataclass
from typing import Dict, Generic, Optional, Tuple, TypeVar

from habitat_ver.common.checks import AUTO

__all__ = ["AUTO", "KindRegistry"]

Builder = TypeVar("Builder")


@dataclass(frozen=True)
class _Entry(Generic[Builder]):
    build: Builder
    trainers: Optional[Tuple[str, ...]]  # trainer kinds that run it; None: all


class KindRegistry(Generic[Builder]):
    """Builders by name, each for some trainer kinds.

    Args:
        what: what the builders build, for messages (``"preemption rule"``).
    """

    def __init__(self, what: str):
        self.what = what
        self._entries: Dict[str, _Entry[Builder]] = {}

    def register(
        self, name: str, build: Builder, trainers: Optional[Tuple[str, ...]] = None
    ) -> None:
        """Adds ``name``; ``trainers`` None: every trainer kind runs it.

        Raises:
            ValueError: ``name`` is ``auto`` or already registered to another builder.
        """
        if name == AUTO:
            raise ValueError(f"{self.what} name 'auto' is reserved (each trainer's default)")
        existing = self._entries.get(name)
        if existing is not None and existing.build != build:
            raise ValueError(
                f"{self.what} {name!r} is already registered to {existing.build!r}; "
                f"refusing to overwrite it with {build!r}"
            )
        self._entries[name] = _Entry(build, None if trainers is None else tuple(trainers))

    def unregister(self, name: str) -> None:
        """Drops ``name`` (tests registering a toy one clean up with it)."""
        self._entries.pop(name, None)

    def names(self, trainer_kind: Optional[str] = None) -> Tuple[str, ...]:
        """Registered names, in registration order; with ``trainer_kind``, only
        those that trainer kind runs."""
        return tuple(
            name
            for name, entry in self._entries.items()
            if trainer_kind is None or entry.trainers is None or trainer_kind in entry.trainers
        )

    def resolve(self, chosen: str, trainer_kind: str) -> str:
        """``chosen``, with ``auto`` read as the first name registered for the kind.

        Raises:
            KeyError: ``auto`` with nothing registered for ``trainer_kind``.
        """
        if chosen != AUTO:
            return chosen
        names = self.names(trainer_kind)
        if not names:
            raise KeyError(f"no {self.what} registered for trainer kind {trainer_kind!r}")
        return names[0]

    def builder(self, name: str) -> Builder:
        """The builder registered as ``name``.

        Raises:
            KeyError: no such name (the message lists the registered ones).
        """
        entry = self._entries.get(name)
        if entry is None:
            raise KeyError(f"no {self.what} {name!r}: registered are {self.names()}")
        return entry.build
