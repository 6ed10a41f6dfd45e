"""Finding an agent's policy section in a habitat-baselines config."""

from typing import Any, Optional


def agent_policy_config(config: Any, agent_name: Optional[str]) -> Optional[Any]:
    """``habitat_baselines.rl.policy[agent_name]``; the only section if there is
    one and ``agent_name`` is not given (single-agent runs); else None."""
    policies = config.habitat_baselines.rl.policy
    if agent_name in policies:
        return policies[agent_name]
    if len(policies) == 1:
        return next(iter(policies.values()))
    return None
