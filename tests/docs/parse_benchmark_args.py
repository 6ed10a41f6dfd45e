"""Parse documented benchmark command lines with each script's own parser, run nothing.

    python tests/docs/parse_benchmark_args.py '[["benchmarks/x.py", "--flag", "1"], ...]'

For each command, imports the script (``-m benchmarks``: ``benchmarks/__main__.py``),
and calls its ``main()`` with that ``sys.argv``; the first
``ArgumentParser.parse_args`` call parses the documented arguments and then
stops the script (nothing is benchmarked).
Flags, counts of values, numbers and choices are checked as the script checks
them; ``type`` callables other than ``int``/``float`` (``--sf-python`` must name
an existing executable: Sample Factory's venv is not on this machine) take the
text as given.  Prints one JSON line per command: ``{"argv": ..., "error": ...}``
with ``error`` empty when the arguments parse.
"""

import argparse
import contextlib
import importlib.util
import io
import json
import sys
from pathlib import Path
from typing import Any, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[2]


class _ParsedError(Exception):
    pass


def _parse_only(self: argparse.ArgumentParser, args: Optional[Sequence[str]] = None, *rest: Any):
    for action in self._actions:
        if action.type not in (None, int, float):
            action.type = None
    _ORIGINAL(self, args, *rest)
    raise _ParsedError


_ORIGINAL = argparse.ArgumentParser.parse_args


def check(argv: List[str]) -> str:
    if argv[:2] == ["-m", "benchmarks"]:
        argv = ["benchmarks/__main__.py", *argv[2:]]
    script = REPO / argv[0]
    sys.path.insert(0, str(script.parent))
    name = "benchmarks_main" if script.stem == "__main__" else script.stem
    spec = importlib.util.spec_from_file_location(name, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    sys.argv = [str(script), *argv[1:]]
    stderr = io.StringIO()
    argparse.ArgumentParser.parse_args = _parse_only  # type: ignore[method-assign,assignment]
    try:
        with contextlib.redirect_stderr(stderr):
            module.main()
    except _ParsedError:
        return ""
    except SystemExit:
        return stderr.getvalue().strip() or "exited while parsing"
    finally:
        argparse.ArgumentParser.parse_args = _ORIGINAL  # type: ignore[method-assign]
    return "main() returned without parsing its arguments"


if __name__ == "__main__":
    for command in json.loads(sys.argv[1]):
        print(json.dumps({"argv": command, "error": check(command)}), flush=True)
