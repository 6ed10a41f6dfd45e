"""The scalar names every trainer (``ddppo``, ``ver``, ``appo``) logs.

One vocabulary for TensorBoard and the text log, in two namespaces:

* ``learner/...``: what the PPO updater measures -- ``learner/loss/policy``,
  ``learner/loss/value``, ``learner/loss/entropy`` (mean entropy),
  ``learner/loss/total``, ``learner/entropy_coef``, ``learner/grad_norm``,
  ``learner/clip_fraction``, ``learner/approx_kl``,
  ``learner/value_pred/{min,mean,max}``, ``learner/prob_ratio/{min,mean,max}``,
  and where they apply ``learner/is_weight/{min,mean,max}`` (ver),
  ``learner/vtrace_rho_mean`` (appo), ``learner/aux/<loss>/<key>``.
* ``system/...``: how the data was made -- :data:`SPS`, :data:`COLLECT_SECONDS`,
  :data:`LEARN_SECONDS`, :data:`COLLECT_SPARE_CORES`, ``system/stale_fraction`` (ver),
  ``system/policy_lag/{min,mean,max}`` (ver, appo),
  ``system/dropped_trajectories`` (appo), ``system/ver_preemption_steps``
  (ver, multi-rank: the fresh steps per rank planned for the *next* rollout,
  VER's estimated optimum; steps in flight at the cut may add one or two),
  :data:`LEARNER_THREADS`, ``system/overlap`` (ver: 1 when the update overlapped
  collection), ``system/inference_batch`` and ``system/inference_seconds``
  (ver: the mean envs per inference call of the update's collection, and the
  seconds those calls took), ``system/nonfinite_rewards`` (ver, appo) and
  ``system/time/<timer>`` (habitat's ``g_timer`` averages).

Per update, a ``.../min`` is the smallest over the update's minibatches, a
``.../max`` the largest, and every other ``learner/`` or ``system/`` value the
mean over them (upstream averages the min and max too).

Kept as habitat-baselines names them, because its evaluator, TensorBoard
dashboards and our learning curve read them: ``reward`` (mean return over the
reward window), ``metrics/<info key>`` (episode metrics), the evaluator's
``eval_reward/...`` and ``eval_metrics/...``, and the env infos upstream's
``should_log_single_proc_infos`` writes under their own names.
"""

__all__ = [
    "COLLECT_SPARE_CORES",
    "COLLECT_SECONDS",
    "LEARN_SECONDS",
    "LEARNER_THREADS",
    "SPS",
    "namespaced",
]

LEARNER = "learner/"
SYSTEM = "system/"

# Env steps per second of wall time since the run began (habitat's "fps").
SPS = "system/sps"
# Seconds the last update spent in collection and in learning.
COLLECT_SECONDS = "system/collect_seconds"
LEARN_SECONDS = "system/learn_seconds"
# The cores the run left unused, on average, while the last rollout was
# collected (habitat_ver/system/spare_cores.py; absent without /proc).
COLLECT_SPARE_CORES = "system/collect_spare_cores"
# Torch threads the last update learnt on (habitat_ver/system/scheduling.py).
LEARNER_THREADS = "system/learner_threads"


def namespaced(key: str) -> str:
    """``key`` as logged: ours as they are, any other updater's under ``learner/``."""
    if key.startswith((LEARNER, SYSTEM)):
        return key
    return LEARNER + key
