"""A mode's own options (core/mode_options) and the RunSpec field that carries their values:
parsing and checking, labels, defaults from the workload, the registry's refusals, and records
written before mode arguments (generate's two fields) read as mode arguments."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from accelbench.core.mode_options import Count, ModeOption
from accelbench.core.modes import (
    Mode,
    check_mode_args,
    check_options_apply,
    find_mode,
    register_mode,
)
from accelbench.core.result import RunSpec
from accelbench.errors import UsageError

SIZE = Count("size", option="--sizes", help="a size", prefix="s", default=4)
KIND = ModeOption("kind", option="--kinds", help="a kind", words=("a", "b"))


def test_a_count_parses_checks_and_labels():
    assert SIZE.parse("12") == 12 and SIZE.label(12) == "s12" and SIZE.sweep_key == "sizes"
    for word, said in (("x", "'x' is not a whole number"), ("0", "must be a whole number")):
        with pytest.raises(ValueError, match=said):
            SIZE.parse(word)
    for value in (True, 2.0, "3", 10**10):
        with pytest.raises(ValueError, match="size must be a whole number from 1"):
            SIZE.check(value)
    assert SIZE.of(RunSpec("mlp", "cpu", 1, 1).with_mode_args(size=3)) == 3
    with pytest.raises(ValueError, match="needs size"):
        SIZE.of(RunSpec("mlp", "cpu", 1, 1))


def test_an_option_of_words_names_the_valid_ones_and_labels_by_name():
    assert KIND.parse("b") == "b" and KIND.label("b") == "kind=b"
    with pytest.raises(ValueError, match="invalid value 'c'; valid: a, b"):
        KIND.parse("c")
    with pytest.raises(ValueError, match="wrong type"):
        KIND.check(None)


def test_the_default_comes_from_the_workload_where_it_says_so():
    @dataclass
    class Model:
        prompt_length: int = 64

    from_model = Count("prompt", option="--prompts", help="", workload_attr="prompt_length")
    assert from_model.default_for(Model()) == 64 and from_model.default_for(object()) is None
    assert SIZE.default_for(Model()) == 4


def test_mode_args_are_sorted_pairs_stored_only_when_set():
    plain = RunSpec("mlp", "cpu", 8, 1)
    assert "mode_args" not in plain.to_dict()
    spec = plain.with_mode_args(b=2, a="x")
    assert spec.mode_args == (("a", "x"), ("b", 2)) and spec.mode_arg("b") == 2
    assert spec.with_mode_args(a=None).mode_args == (("b", 2),)
    assert RunSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(UsageError, match="sorted by name"):
        RunSpec("mlp", "cpu", 8, 1, mode_args=(("b", 1), ("a", 2)))


def test_generate_s_fields_of_earlier_versions_read_as_its_mode_arguments():
    old = {"workload": "gpt2-tiny", "device": "cpu", "batch_size": 1, "steps_per_block": 1}
    spec = RunSpec.from_dict({**old, "mode": "generate", "prompt_length": 12, "new_tokens": 6})
    assert spec.mode_args == (("new_tokens", 6), ("prompt_length", 12))
    train = RunSpec.from_dict({**old, "prompt_length": None, "new_tokens": None})
    assert train.mode_args == ()


def test_a_mode_s_label_pieces_follow_its_declared_order():
    class Sized(Mode):
        name = "sized-test"
        options = (SIZE, KIND)

    spec = RunSpec("mlp", "cpu", 8, 1).with_mode_args(size=2, kind="a", gone=1)
    assert Sized().label_parts(spec) == ["s2", "kind=a", "gone=1"]  # gone: a plugin not loaded
    assert [name for name, _ in Sized().ordered_args(spec)] == ["size", "kind", "gone"]


def test_the_registry_refuses_clashing_options_and_checks_values():
    class Clash(Mode):
        name = "clash-test"
        options = (Count("other", option="--prompt-lengths", help=""),)

    with pytest.raises(ValueError, match="clashes with 'prompt_length'"):
        register_mode(Clash)
    with pytest.raises(UsageError, match="mode 'train' has no option 'size'; valid: none"):
        check_mode_args(find_mode("train"), {"size": 1})
    with pytest.raises(UsageError, match="--new-tokens applies to --modes generate or serve only"):
        check_options_apply(["new_tokens"], ["train"])
    with pytest.raises(UsageError, match="--prompt-length applies to --mode generate or serve"):
        check_options_apply(["prompt_length"], ["infer"], single=True)
    with pytest.raises(UsageError, match="no mode has an option 'nope'"):
        check_options_apply(["nope"], ["generate"])
    check_options_apply(["new_tokens"], ["train", "generate"])  # one mode that has it is enough


def test_a_mode_option_that_takes_a_command_s_own_flag_is_one_line():
    import argparse

    from accelbench.cli.mode_options import add_mode_options
    from accelbench.core import modes

    class Taken(Mode):
        name = "taken-test"
        options = (Count("taken", option="--batch-sizes", help=""),)

    register_mode(Taken)
    try:
        parser = argparse.ArgumentParser()
        parser.add_argument("--batch-sizes")
        with pytest.raises(UsageError, match="'taken-test' declares --batch-sizes, an option"):
            add_mode_options(parser)
    finally:
        del modes._MODES["taken-test"]  # noqa: SLF001 (the registry has no unregister)
