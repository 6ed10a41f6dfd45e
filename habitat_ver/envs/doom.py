"""ViZDoom scenarios as gym (0.23 API) environments, rendered on CPU.

Every scenario shares one observation space, ``{"rgb": Box(0, 255, (H, W, 3),
uint8)}`` at a configurable resolution, and one discrete action set
(:data:`ACTIONS`), so environments running different scenarios can be mixed in
one vector env and driven by one policy.  The engine renders at the smallest
ViZDoom screen resolution that covers the requested size and the frame is
resized with area averaging.

Scenarios (files ship in the ``vizdoom`` wheel):

* ``my_way_home``: find the vest in a maze of rooms (sparse reward).
* ``health_gathering``: collect medkits on an acid floor (survival reward).
* ``defend_the_center``: turn and shoot approaching monsters.
* ``deathmatch_bots``: ``cig.cfg``'s deathmatch map against 7 bots; reward =
  change of the frag count; the player respawns after dying.  The heavy one:
  bots and a large map make each step about three times slower.

Episodes end when the scenario's cfg says (``episode_timeout``: 2100 tics for
the first three, 25200 for the bots map; 35 tics = one game second) unless the
``episode_timeout`` argument overrides it.
"""

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import gym
import numpy as np
from gym import spaces

# The engine's folder in the working directory (ViZDoom's default).
ENGINE_FOLDER = "_vizdoom"

# One shared button list and action list for every scenario (each cfg's own
# button list is replaced): envs of a scenario mix then have equal action
# spaces and one policy drives them all.  Action i presses ACTIONS[i].
BUTTONS = ("MOVE_FORWARD", "TURN_LEFT", "TURN_RIGHT", "ATTACK", "MOVE_LEFT", "MOVE_RIGHT")
ACTIONS: Tuple[Tuple[str, ...], ...] = (
    (),
    ("MOVE_FORWARD",),
    ("TURN_LEFT",),
    ("TURN_RIGHT",),
    ("MOVE_FORWARD", "TURN_LEFT"),
    ("MOVE_FORWARD", "TURN_RIGHT"),
    ("ATTACK",),
    ("MOVE_LEFT",),
    ("MOVE_RIGHT",),
)

# Engine screen sizes (width, height) we render at, smallest first.
_SCREEN_SIZES = ((160, 120), (200, 150), (256, 192), (320, 240), (400, 300), (640, 480))


@dataclass(frozen=True)
class Scenario:
    """A ViZDoom config file plus what our wrapper adds to it."""

    cfg: str
    # Extra engine arguments (deathmatch rules for the bots map).
    game_args: str = ""
    # Number of bots added after every episode start.
    bots: int = 0
    # Reward = change of the frag count (the cfg defines no reward).
    frag_reward: bool = False


SCENARIOS: Dict[str, Scenario] = {
    "my_way_home": Scenario("my_way_home.cfg"),
    "health_gathering": Scenario("health_gathering.cfg"),
    "defend_the_center": Scenario("defend_the_center.cfg"),
    "deathmatch_bots": Scenario(
        "cig.cfg",
        game_args=(
            "-host 1 -deathmatch +sv_forcerespawn 1 "
            "+sv_noautoaim 1 +sv_respawnprotect 1 +sv_spawnfarthest 1 "
            "+sv_nocrouch 1 +viz_respawn_delay 0"
        ),
        bots=7,
        frag_reward=True,
    ),
}


def screen_size_for(height: int, width: int) -> Tuple[int, int]:
    """Smallest engine (width, height) covering ``height`` x ``width``."""
    for w, h in _SCREEN_SIZES:
        if w >= width and h >= height:
            return w, h
    raise ValueError(
        f"resolution {height}x{width} is larger than the largest supported "
        f"screen {_SCREEN_SIZES[-1][1]}x{_SCREEN_SIZES[-1][0]}"
    )


def resize_area(frame: np.ndarray, height: int, width: int) -> np.ndarray:
    """Area-average ``frame`` down to ``height`` x ``width``.

    Uses OpenCV when it is installed (it is not a dependency) and an exact
    numpy block average otherwise.

    Shapes:
        frame: (H, W, C) uint8 with H >= height and W >= width.
        returns: (height, width, C) uint8.
    """
    if frame.shape[:2] == (height, width):
        return frame
    try:
        import cv2
    except ImportError:
        return _resize_area_numpy(frame, height, width)
    return cv2.resize(frame, (width, height), interpolation=cv2.INTER_AREA)


def _resize_area_numpy(frame: np.ndarray, height: int, width: int) -> np.ndarray:
    # Output pixel (i, j) averages the source block between consecutive
    # integer boundaries; reduceat sums each block in one pass per axis.
    rows = np.linspace(0, frame.shape[0], height + 1).astype(np.int64)
    cols = np.linspace(0, frame.shape[1], width + 1).astype(np.int64)
    sums = np.add.reduceat(frame.astype(np.float64), rows[:-1], axis=0)
    sums = np.add.reduceat(sums, cols[:-1], axis=1)
    counts = np.diff(rows)[:, None, None] * np.diff(cols)[None, :, None]
    return np.rint(sums / counts).astype(np.uint8)


class DoomEnv(gym.Env):
    """One ViZDoom game (see the module docstring).

    Args:
        scenario: a key of :data:`SCENARIOS`.
        resolution: observation ``[height, width]``.
        frame_skip: engine tics per agent step (the action is repeated).
        episode_timeout: optional cap on tics per episode (cfg default if None).
    """

    metadata: Dict[str, List[str]] = {"render.modes": []}

    def __init__(
        self,
        scenario: str = "my_way_home",
        resolution: Tuple[int, int] = (72, 96),
        frame_skip: int = 4,
        episode_timeout: Optional[int] = None,
    ):
        if scenario not in SCENARIOS:
            raise ValueError(
                f"scenario={scenario!r} is not allowed: choose from {sorted(SCENARIOS)}"
            )
        if frame_skip < 1:
            raise ValueError(f"frame_skip={frame_skip} is not allowed: must be >= 1")
        self.scenario = SCENARIOS[scenario]
        self.scenario_name = scenario
        self.height, self.width = (int(v) for v in resolution)
        self.frame_skip = int(frame_skip)
        self._episode_timeout = episode_timeout
        self.observation_space = spaces.Dict(
            {"rgb": spaces.Box(0, 255, (self.height, self.width, 3), np.uint8)}
        )
        self.action_space = spaces.Discrete(len(ACTIONS))
        self._game: Any = None
        self._seed: Optional[int] = None
        self._action_vectors: List[List[int]] = [
            [int(b in combo) for b in BUTTONS] for combo in ACTIONS
        ]
        self._last_frame = np.zeros((self.height, self.width, 3), np.uint8)
        self._frags = 0.0

    # The game starts lazily so that the env can be built, pickled or
    # inspected for its spaces without launching the engine.
    def _start(self) -> None:
        import vizdoom as vzd

        game = vzd.DoomGame()
        game.load_config(os.path.join(vzd.scenarios_path, self.scenario.cfg))
        game.set_window_visible(False)
        game.set_sound_enabled(False)
        game.set_screen_format(vzd.ScreenFormat.RGB24)
        w, h = screen_size_for(self.height, self.width)
        game.set_screen_resolution(getattr(vzd.ScreenResolution, f"RES_{w}X{h}"))
        game.set_available_buttons([getattr(vzd.Button, b) for b in BUTTONS])
        game.set_mode(vzd.Mode.PLAYER)
        if self.scenario.frag_reward:
            game.add_available_game_variable(vzd.GameVariable.FRAGCOUNT)
        if self.scenario.game_args:
            game.add_game_args(self.scenario.game_args)
        if self._episode_timeout is not None:
            game.set_episode_timeout(int(self._episode_timeout))
        if self._seed is not None:
            game.set_seed(int(self._seed) % (2**31))
        # The engine makes ./_vizdoom/ (its config and temp folder) in the
        # working directory when it is missing. Envs starting at once in a new
        # folder race on it: the loser prints "Failed to create ./_vizdoom/
        # directory: File exists" and its worker dies of SIGSEGV. Made first
        # here, the engine finds it.
        os.makedirs(ENGINE_FOLDER, exist_ok=True)
        game.init()
        self._game = game

    def seed(self, seed: Optional[int] = None) -> List[int]:
        """Seed the engine's random generator (monsters, items, bots)."""
        self._seed = seed
        if self._game is not None and seed is not None:
            self._game.set_seed(int(seed) % (2**31))
        return [] if seed is None else [int(seed)]

    def _observe(self) -> Dict[str, np.ndarray]:
        state = self._game.get_state()
        if state is not None:  # None once the episode has ended
            self._last_frame = resize_area(state.screen_buffer, self.height, self.width)
        return {"rgb": self._last_frame.copy()}

    def reset(self) -> Dict[str, np.ndarray]:
        """Start a new episode (and the engine on the first call).

        Returns:
            ``{"rgb": (H, W, 3) uint8}``, the first frame.
        """
        if self._game is None:
            self._start()
        self._game.new_episode()
        if self.scenario.bots:
            self._game.send_game_command("removebots")
            for _ in range(self.scenario.bots):
                self._game.send_game_command("addbot")
        self._frags = 0.0
        return self._observe()

    def _frag_delta(self) -> float:
        import vizdoom as vzd

        frags = self._game.get_game_variable(vzd.GameVariable.FRAGCOUNT)
        delta, self._frags = frags - self._frags, frags
        return float(delta)

    def step(self, action: Any) -> Tuple[Dict[str, np.ndarray], float, bool, Dict]:
        """Press ``ACTIONS[action]`` for ``frame_skip`` tics.

        Returns:
            ``(obs, reward, done, info)`` in gym 0.23's form; ``obs`` is the
            last frame again once the episode has ended, ``info`` is empty.
        """
        if not self.action_space.contains(int(action)):
            raise ValueError(f"action={action!r} is not allowed: expected 0..{len(ACTIONS) - 1}")
        if self._game.is_player_dead():
            self._game.respawn_player()  # deathmatch: play on after dying
        reward = float(self._game.make_action(self._action_vectors[int(action)], self.frame_skip))
        if self.scenario.frag_reward:
            reward = self._frag_delta()
        done = bool(self._game.is_episode_finished())
        return self._observe(), reward, done, {}

    def close(self) -> None:
        if self._game is not None:
            self._game.close()
            self._game = None
