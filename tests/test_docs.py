"""The README stays short, and docs/ stays true: each command's page lists the parser's options,
the architecture page names every module of the package and none that is gone, and every
relative link in the README and docs/ leads to a file that exists."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from accelbench.cli.docs import PAGES, REGENERATE, command_parser, spellings, subcommands
from accelbench.cli.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE = ROOT / "src" / "accelbench"


def test_the_readme_is_at_most_250_lines():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move the detail to docs/"


def test_every_command_has_a_page():
    documented = {path for paths in PAGES.values() for path in paths}
    commands = set(subcommands(build_parser()))
    commands |= {f"results {name}" for name in subcommands(subcommands(build_parser())["results"])}
    assert commands == documented
    assert {p.stem for p in (DOCS / "commands").glob("*.md")} == {*PAGES, "index"}


def test_the_command_pages_list_the_parsers_options():
    # In a process of its own without plugins: a lever a test registered would add its option.
    env = {k: v for k, v in os.environ.items() if k != "ACCELBENCH_LEVERS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE.parent), env.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, "-m", "accelbench.cli.docs", "--check", str(DOCS)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, f"{out.stderr.strip()}: regenerate them with `{REGENERATE}`"


def test_one_spelling_per_idea_plural_for_a_list_singular_for_one_value():
    """docs/options.md's rows: an idea is spelled at most two ways, its singular taking one
    value and its plural a list (DESIGN.md's CLI conventions), in every command."""
    for idea, by_command in spellings().items():
        spelled = {action.option_strings[0] for action in by_command.values()}
        assert len(spelled) <= 2, (idea, spelled)
        for command, action in by_command.items():
            option = action.option_strings[0]
            if len(spelled) == 2 and option == max(spelled, key=len):  # the plural
                assert option.endswith("s") and action.metavar == "LIST", (command, option)
            elif len(spelled) == 2:
                assert action.metavar != "LIST", (command, option)
    # explain measures one configuration: none of its options takes a list
    assert not [a for a in command_parser("explain")._actions if a.metavar == "LIST"]
    assert spellings()["batch-size"]["export"].option_strings == ["--batch-size"]


def _architecture_modules() -> set[str]:
    """The modules the architecture table's first column names: `folder/name` and the bare names
    after it in the same cell (in that folder), `folder/` for a package's __init__."""
    named = set()
    for line in (DOCS / "architecture.md").read_text().splitlines():
        if not line.startswith("| `") and not line.startswith("| **`"):
            continue
        folder = ""
        for token in re.findall(r"`([^`]+)`", line.split("|")[1]):
            if "/" in token:
                folder, _, name = token.rpartition("/")
                named.add(token if not name else f"{folder}/{name}")
            else:
                named.add(f"{folder}/{token}" if folder else token)
    return named


def _package_modules() -> set[str]:
    modules = set()
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).with_suffix("").as_posix()
        if relative.endswith("/__init__"):
            relative = relative.removesuffix("__init__")
        modules.add(relative)
    return modules


def test_the_architecture_names_every_module():
    missing = sorted(_package_modules() - _architecture_modules())
    assert not missing, f"docs/architecture.md does not name {missing}"


def test_every_module_the_architecture_names_exists():
    gone = sorted(_architecture_modules() - _package_modules())
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"


MARKDOWN = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("page", MARKDOWN, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_lead_to_files(page):
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.exists(), f"{page.name} links to {target}, which does not exist"


@pytest.mark.parametrize("page", MARKDOWN, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_code_block_is_closed(page):
    """An unclosed fence renders the rest of the page as code (the cut README had one)."""
    fences = [line for line in page.read_text().splitlines() if line.startswith("```")]
    assert len(fences) % 2 == 0, f"{page.name} has an unclosed code block"
