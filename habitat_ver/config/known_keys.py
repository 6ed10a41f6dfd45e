"""Keys a config holds that its schema does not declare.

Hydra refuses an override of a key that does not exist, but ``+key=value``
adds it anyway, even under a schema (dataclass) node: ``+habitat_baselines.rl.
ppo.lrr=1`` composes, and the run ignores the misspelt learning rate.  Every
node typed by a dataclass may hold only that dataclass's fields; nodes typed as
plain dicts (``rl.policy``, ``task.measurements``, ...) hold any key.
"""

import dataclasses
from typing import Any, Iterator, List, NamedTuple, Optional, Tuple, Union

from omegaconf import DictConfig, ListConfig, OmegaConf


class UnknownKey(NamedTuple):
    """A key of a dataclass-typed node that the dataclass does not declare."""

    path: str  # dotted path of the key
    value: Any  # its value (containers as plain data)
    schema: type  # the dataclass of the node holding it
    known: List[str]  # the dataclass's fields


def _children(node: Any, path: str) -> Iterator[Tuple[str, Any, Any]]:
    if node._is_none() or node._is_missing() or node._is_interpolation():
        return
    if isinstance(node, DictConfig):
        for key in node.keys():
            name = str(key)
            yield f"{path}.{name}" if path else name, key, node._get_node(key)
    elif isinstance(node, ListConfig):
        for index in range(len(node)):
            yield f"{path}[{index}]", index, node._get_node(index)


def unknown_keys(config: Union[DictConfig, ListConfig], path: str = "") -> List[UnknownKey]:
    """Every key under ``config`` that its dataclass-typed parent does not declare.

    Args:
        config: a composed config (any node of one).
        path: dotted path of ``config`` in the whole config, for the report.

    Returns:
        The unknown keys, in config order.
    """
    found: List[UnknownKey] = []
    schema = OmegaConf.get_type(config) if isinstance(config, DictConfig) else None
    known: Optional[List[str]] = None
    if schema is not None and dataclasses.is_dataclass(schema):
        known = [f.name for f in dataclasses.fields(schema)]
    for child_path, key, child in _children(config, path):
        if schema is not None and known is not None and key not in known:
            value = child
            if isinstance(child, (DictConfig, ListConfig)):
                value = OmegaConf.to_container(child, resolve=False)
            else:
                value = child._value()
            found.append(UnknownKey(child_path, value, schema, known))
        elif isinstance(child, (DictConfig, ListConfig)):
            found.extend(unknown_keys(child, child_path))
    return found
