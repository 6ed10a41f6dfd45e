"""The shell commands in the documentation's code blocks, as a reader copies them.

Reads every fenced (```) and 4-space-indented code block of the user-facing
documents (:data:`DOCS`) and turns each block into commands the way a shell
would read it: ``\\`` continuations joined, comments (``#`` at the start of a
word, outside quotes) and blank lines dropped, and a ``for VAR in a b; do ...
done`` loop expanded into its commands with ``$VAR`` / ``${VAR}`` filled in.

A block is a *command block* when it is fenced as ``bash``/``sh``/``shell``/
``console`` or its first line (after ``VAR=value`` prefixes) starts with a
program in :data:`PROGRAM`; any other block (a folder tree, a formula, YAML) is
a :class:`TextBlock`, which ``tests/docs/test_doc_commands.py`` must list by its
first line, so a new command written some other way is not silently skipped.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Tuple, Union

REPO = Path(__file__).resolve().parents[2]
# The documents whose commands must run (README.md and docs/*.md, the pages
# they link for set-up and the embedded environments).
DOCS = (
    "README.md",
    "CONTRIBUTING.md",
    *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md")),
    "habitat_ver/envs/README.md",
)
SHELL_LANGS = {"bash", "sh", "shell", "console"}
# The first word of a command line, after any ``VAR=value`` prefixes.
PROGRAM = re.compile(
    r"^(?:\w+=\S*\s+)*(?:\S*/)?(?:python[0-9.]*|pip|make|conda|git|torchrun|bash)\s|^for\s"
)
_FOR = re.compile(r"^for (\w+) in ([^;]+); do$")


@dataclass(frozen=True)
class Command:
    """One command as a shell runs it, and where the docs have it."""

    text: str  # normalised: comment dropped, continuations joined, single spaces
    where: str  # "docs/HAB.md:123" (the block's first line of the command)


@dataclass(frozen=True)
class TextBlock:
    """A code block that holds no command: a tree, a formula, a config."""

    first_line: str
    where: str


Block = Tuple[str, int, str, List[str]]  # (doc, first line number, language, lines)


def code_blocks(doc: str, text: str) -> Iterator[Block]:
    """Every fenced and indented code block of one markdown file, dedented."""
    lines = text.split("\n")
    i = 0
    prev_blank = True
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(\s*)```(\w*)\s*$", line)
        if fence:
            indent, lang = len(fence.group(1)), fence.group(2)
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith("```"):
                j += 1
            yield doc, i + 2, lang, [ln[indent:] for ln in lines[i + 1 : j]]
            i, prev_blank = j + 1, False
            continue
        if prev_blank and line.startswith("    ") and line.strip():
            indent = len(line) - len(line.lstrip())
            j = i
            while j < len(lines) and (
                not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) >= indent
            ):
                j += 1
            while j > i and not lines[j - 1].strip():
                j -= 1
            yield doc, i + 1, "", [ln[indent:] for ln in lines[i:j]]
            i, prev_blank = j, False
            continue
        prev_blank = not line.strip()
        i += 1


def strip_comment(line: str) -> str:
    """``line`` without a shell comment: ``#`` starting a word, outside quotes."""
    quote = ""
    for k, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (k == 0 or line[k - 1].isspace()):
            return line[:k].rstrip()
    return line.rstrip()


def _logical_lines(doc: str, start: int, lines: List[str]) -> Iterator[Tuple[str, str]]:
    """(text, where) for each line of a block, continuations joined."""
    pending, where = "", ""
    for offset, raw in enumerate(lines):
        line = strip_comment(raw) if not pending else raw.rstrip()
        if not pending:
            where = f"{doc}:{start + offset}"
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined = " ".join(strip_comment(pending + line).split())
        pending = ""
        if joined:
            yield joined, where


def _expand(var: str, values: List[str], body: List[Tuple[str, str]]) -> List[Command]:
    out = []
    for value in values:
        for text, where in body:
            out.append(Command(text.replace("${%s}" % var, value).replace("$" + var, value), where))
    return out


def block_commands(doc: str, start: int, lines: List[str]) -> List[Command]:
    """The commands of one command block, loops expanded."""
    commands: List[Command] = []
    loop: Union[None, Tuple[str, List[str], List[Tuple[str, str]]]] = None
    for text, where in _logical_lines(doc, start, lines):
        header = _FOR.match(text)
        if header:
            loop = (header.group(1), header.group(2).split(), [])
        elif text == "done" and loop is not None:
            commands += _expand(*loop)
            loop = None
        elif loop is not None:
            loop[2].append((text, where))
        else:
            commands.append(Command(text, where))
    if loop is not None:
        raise ValueError(f"{doc}:{start}: a `for` loop without its `done`")
    return commands


def is_command_block(lang: str, lines: List[str]) -> bool:
    if lang:
        return lang in SHELL_LANGS
    first = next((ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")), "")
    return bool(PROGRAM.match(first + " "))


def read_docs(docs=DOCS) -> Tuple[List[Command], List[TextBlock]]:
    """Every documented command (in document order) and every non-command block."""
    commands: List[Command] = []
    text_blocks: List[TextBlock] = []
    for doc in docs:
        for name, start, lang, lines in code_blocks(doc, (REPO / doc).read_text()):
            if is_command_block(lang, lines):
                commands += block_commands(name, start, lines)
            else:
                first = next(ln.strip() for ln in lines if ln.strip())
                text_blocks.append(TextBlock(first, f"{name}:{start}"))
    return commands, text_blocks


def commands_by_text(docs=DOCS) -> Dict[str, List[str]]:
    """Each distinct command's text and every place the docs have it."""
    found: Dict[str, List[str]] = {}
    for command in read_docs(docs)[0]:
        found.setdefault(command.text, []).append(command.where)
    return found


if __name__ == "__main__":
    for text, places in commands_by_text().items():
        print(f"{text}\n    {', '.join(places)}")
    for block in read_docs()[1]:
        print(f"TEXT {block.where}: {block.first_line}")
