"""What a trainer provides to the components it runs, by name.

A return estimator or preemption rule registers the capabilities it needs
(:class:`~habitat_ver.common.kind_registry.KindRegistry`); a trainer class
lists those it provides in ``PROVIDES``.  A config may choose any registered
component whose needs the trainer covers.
"""

__all__ = ["CUT_ROLLOUT", "OFF_POLICY_TRAJECTORIES", "ROLLOUT_STEPS", "VARIABLE_EXPERIENCE"]

# The storage hands the rollout's steps to the targets step before the epochs
# and takes the returns back (``return_steps``/``store_returns``): gae.
ROLLOUT_STEPS = "rollout_steps"
# Fixed-length trajectories (T, b) collected by policies older than the
# learner's, with the acting policy's log-probs, per minibatch: vtrace.
OFF_POLICY_TRAJECTORIES = "off_policy_trajectories"
# The loop can end a rank's rollout early and learn on what it holds: ddppo's rule.
CUT_ROLLOUT = "cut_rollout"
# The storage takes a varying number of steps per env, so a cut rank fills its
# batch with its latest steps: ver's rule.
VARIABLE_EXPERIENCE = "variable_experience"
