"""The parser every command is built on: prefix matching off, the replaced spellings refused
with the new one offered, and a close match offered for a mistyped command, option or value,
in one line that names the `--help` of the command that refused it (issue 37, items 8 and 9)."""

import pytest

from accelbench.cli.docs import subcommands
from accelbench.cli.main import build_parser
from accelbench.cli.parser import RENAMED, did_you_mean
from tests.conftest import run_cli


def _parsers():
    """Every parser of the command line, by its prog: the top one, each command, each action."""
    found = {}
    waiting = [build_parser()]
    while waiting:
        parser = waiting.pop()
        found[parser.prog] = parser
        waiting += subcommands(parser).values()
    return found


def _refusal(capsys, *argv):
    """What the parser says, in one line on stderr, when it refuses `argv` (exit code 2)."""
    with pytest.raises(SystemExit) as ended:
        build_parser().parse_args(argv)
    assert ended.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_no_parser_takes_an_option_by_its_prefix():
    parsers = _parsers()
    assert {"accelbench", "accelbench run", "accelbench results export"} <= set(parsers)
    assert all(not parser.allow_abbrev for parser in parsers.values())


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["run", "--device", "cpu"], "--devices"),  # a prefix argparse took silently before
        (["explain", "--devices", "cpu"], "--device"),
        (["export", "mlp", "--batch", "4"], "--batch-size"),
        (["run", "--epochs", "3"], "--blocks"),
        (["explain", "mlp", "--epochs", "3"], "--blocks"),
        (["optimize", "mlp", "--epochs", "3"], "--blocks"),
        (["explain", "mlp", "--precisions", "bf16"], "--precision"),
        (["explain", "mlp", "--memory-formats", "channels_last"], "--memory-format"),
        (["verify", "mlp", "--precision", "bf16"], "--precisions"),
        (["run", "--batch-size=8"], "--batch-sizes"),
        (["verify", "mlp", "--tolerance", "2"], "--accuracy-tolerance"),
    ],
)
def test_an_option_spelled_another_way_is_refused_with_the_right_one(capsys, argv, meant):
    said = _refusal(capsys, *argv)
    option = argv[1] if argv[1].startswith("-") else argv[2]
    assert f"unknown option {option.partition('=')[0]} (did you mean {meant}?)" in said
    assert said.startswith(f"accelbench {argv[0]}: error: ")
    assert said.endswith(f"(see accelbench {argv[0]} --help)")


def test_the_replaced_spellings_are_gone_where_the_new_ones_are():
    """An old spelling is refused, never a second name: no parser offers both."""
    for prog, parser in _parsers().items():
        offered = {name for action in parser._actions for name in action.option_strings}
        for old, new in RENAMED.items():
            assert not {old, new} <= offered, prog


def test_verify_keeps_epochs_for_passes_over_the_data():
    args = build_parser().parse_args(["verify", "mlp", "--epochs", "3"])
    assert args.epochs == 3
    assert build_parser().parse_args(["run", "--blocks", "3"]).epochs == 3


def test_tolerance_is_one_idea_per_command():
    """optimize's --tolerance is a relative output error; verify's accuracy points are
    --accuracy-tolerance, beside its --loss-tolerance."""
    assert build_parser().parse_args(["optimize", "--tolerance", "0.1"]).tolerance == 0.1
    args = build_parser().parse_args(["verify", "--accuracy-tolerance", "3"])
    assert args.tolerance == 3.0


def test_an_option_nothing_is_close_to_is_named_alone(capsys):
    said = _refusal(capsys, "run", "--bogus")
    assert said == "accelbench run: error: unknown option --bogus (see accelbench run --help)"
    said = _refusal(capsys, "explain", "mlp", "extra")
    assert said.startswith("accelbench explain: error: unexpected argument(s): extra")


def test_an_option_before_the_command_is_named_not_taken_for_a_missing_command(capsys):
    said = _refusal(capsys, "--verison")
    assert (
        said == "accelbench: error: unknown option --verison (did you mean --version?) (see "
        "accelbench --help)"
    )
    said = _refusal(capsys, "--json", "devices")
    assert said.startswith(
        "accelbench: error: unknown option --json (options go after the command)"
    )


def test_a_mistyped_value_gets_the_closest_valid_one(capsys):
    said = _refusal(capsys, "run", "--modes", "trian")
    assert "argument --modes: invalid value 'trian' (did you mean train?); valid: train" in said
    said = _refusal(capsys, "compare", "--by", "precison")
    assert "argument --by: invalid choice 'precison' (did you mean precision?); valid: " in said


def test_explain_takes_one_value_of_a_lever(capsys):
    said = _refusal(capsys, "explain", "mlp", "--precision", "fp32,bf16")
    assert "argument --precision: one value, not a list (fp32,bf16): run takes lists" in said
    args = build_parser().parse_args(["explain", "mlp", "--memory-format", "channels_last"])
    assert args.lever_channels_last == (True,)


def test_did_you_mean_compares_options_without_their_dashes():
    assert did_you_mean("--bogus", ["--rounds", "--budget"]) == ""  # dashes alone are no match
    assert did_you_mean("--devcies", ["--devices", "--modes"]) == " (did you mean --devices?)"
    assert did_you_mean("optimise", ["optimize", "explain"]) == " (did you mean optimize?)"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["optimise", "mlp"],
            "accelbench: error: unknown command 'optimise' (did you mean optimize?); valid: run,",
        ),
        (
            ["compare", "--by", "precison"],
            "accelbench compare: error: argument --by: invalid choice 'precison' (did you mean "
            "precision?)",
        ),
        (
            ["results", "list"],
            "accelbench results: error: unknown action 'list'; valid: export, import; with "
            "none, `accelbench results` lists the stored results (see accelbench results --help)",
        ),
        (
            ["export", "mlp", "--batch", "4"],
            "accelbench export: error: unknown option --batch (did you mean --batch-size?) "
            "(see accelbench export --help)",
        ),
        (
            ["run", "mlp", "--device", "cpu"],  # the prefix of --devices, taken silently before
            "accelbench run: error: unknown option --device (did you mean --devices?) "
            "(see accelbench run --help)",
        ),
    ],
)
def test_the_command_line_finds_what_was_meant(tmp_path, argv, said):
    """The real command: one line, exit code 2, nothing written (no database, no export)."""
    out = run_cli(*argv, "--out" if argv[0] == "export" else "--db", str(tmp_path / "x"))
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and said in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_run_with_an_old_spelling_measures_and_stores_nothing(tmp_path):
    out = run_cli("run", "mlp", "--devices", "cpu", "--epochs", "2", "--db", str(tmp_path / "r.db"))
    assert out.returncode == 2 and "(did you mean --blocks?)" in out.stderr
    assert not (tmp_path / "r.db").exists()


def test_every_parser_is_the_suggesting_one():
    from accelbench.cli.parser import Parser

    assert all(isinstance(p, Parser) for p in _parsers().values())
