"""A name -> builder table whose entries say what they need of a trainer.

Preemption rules (:mod:`habitat_ver.distributed.preemption_rule`) and return
estimators (:mod:`habitat_ver.updaters.targets`) are both chosen by a config
name; each module keeps one :class:`KindRegistry`.  An entry names the
capabilities it needs (``needs``: what it reads from the trainer's storage or
loop, e.g. ``rollout_steps``); a trainer class says what it provides
(``PROVIDES``), and may run the entries whose needs it covers.  A new trainer
that provides ``rollout_steps`` runs ``gae`` with no edit here or there.  For
an estimator, ``auto`` is the first one the trainer can run
(:meth:`KindRegistry.resolve`); for a preemption rule it is the trainer's
``DEFAULT_PREEMPTION``.
"""

from dataclasses import dataclass
from typing import AbstractSet, Dict, FrozenSet, Generic, Iterable, Optional, Tuple, TypeVar

from habitat_ver.common.checks import AUTO

__all__ = ["AUTO", "KindRegistry"]

Builder = TypeVar("Builder")


@dataclass(frozen=True)
class _Entry(Generic[Builder]):
    build: Builder
    needs: FrozenSet[str]  # capabilities a trainer must provide to run it


class KindRegistry(Generic[Builder]):
    """Builders by name, each with the capabilities it needs.

    Args:
        what: what the builders build, for messages (``"preemption rule"``).
    """

    def __init__(self, what: str):
        self.what = what
        self._entries: Dict[str, _Entry[Builder]] = {}

    def register(self, name: str, build: Builder, needs: Iterable[str] = ()) -> None:
        """Adds ``name``, runnable by a trainer that provides every one of ``needs``.

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
        self._entries[name] = _Entry(build, frozenset(needs))

    def unregister(self, name: str) -> None:
        """Drops ``name`` (tests registering a toy one clean up with it)."""
        self._entries.pop(name, None)

    def names(self, provides: Optional[AbstractSet[str]] = None) -> Tuple[str, ...]:
        """Registered names, in registration order; with ``provides`` (a
        trainer's ``PROVIDES``), only those whose needs it covers."""
        return tuple(
            name
            for name, entry in self._entries.items()
            if provides is None or entry.needs <= provides
        )

    def resolve(self, chosen: str, provides: AbstractSet[str]) -> str:
        """``chosen``, with ``auto`` read as the first name ``provides`` covers.

        Raises:
            KeyError: ``auto`` where ``provides`` covers no entry.
        """
        if chosen != AUTO:
            return chosen
        names = self.names(provides)
        if not names:
            raise KeyError(f"no {self.what} registered that needs only {sorted(provides)}")
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
