"""What every registered lever and backend owes the rest of accelbench, one test per entry: a
broken lever fails under its own name instead of hiding the others behind it in a loop."""

from dataclasses import replace

import pytest

from accelbench import devices
from accelbench.backends import all_backends
from accelbench.engine.runner import make_spec
from accelbench.levers import Lever, Variant, all_levers, check_levers, ladder_groups
from accelbench.workloads import get_workload

GPU = devices.Device(
    "cuda:0",
    "cuda",
    True,
    "",
    dtypes=devices.DtypeSupport(fp16=True, bf16=True, tf32=True),
    backend=devices.BACKENDS["cuda"],
)
CPU = next(d for d in devices.discover() if d.kind == "cpu")
SEED, GPT2 = get_workload("seed-cnn"), get_workload("gpt2-tiny")
# (device, workload, mode): the configurations each lever is asked about
BASES = [
    (CPU, SEED, "infer"),
    (CPU, SEED, "train"),
    (GPU, SEED, "train"),
    (GPU, GPT2, "generate"),
]
LEVERS = list(all_levers())
BASE_IDS = [f"{device.kind}-{workload.name}-{mode}" for device, workload, mode in BASES]


def _base(device, workload, mode):
    return make_spec(workload, device, mode=mode, batch_size=4)


@pytest.mark.parametrize("lever", LEVERS, ids=lambda lever: lever.name)
def test_a_lever_reads_back_every_word_it_offers(lever: Lever):
    for word in lever.words:
        assert lever.word(lever.parse(word)) == word
    assert lever.word(lever.default) == lever.baseline_word() or not lever.words


@pytest.mark.parametrize("lever", LEVERS, ids=lambda lever: lever.name)
def test_a_lever_at_its_default_is_not_stored(lever: Lever):
    """A spec is equal however its levers were set: a default is never a stored value."""
    spec = lever.assign(_base(*BASES[0]), lever.default)
    assert lever.name not in dict(spec.levers) and lever.value(spec) == lever.default
    check_levers(spec)


@pytest.mark.parametrize("base", BASES, ids=BASE_IDS)
@pytest.mark.parametrize("lever", LEVERS, ids=lambda lever: lever.name)
def test_a_lever_answers_the_search_for_each_kind_of_configuration(lever: Lever, base):
    """Its variants are valid specs in one of its groups, each with code a user can copy, and
    for every group it offers it can say why it was not tried (or nothing)."""
    device, workload, mode = base
    spec = _base(*base)
    reason = lever.unsupported(spec, device, workload)
    assert reason is None or (isinstance(reason, str) and reason)
    for variant in lever.variants(spec, device, workload):
        assert isinstance(variant, Variant) and variant.name
        assert variant.group in ladder_groups(), variant.group
        check_levers(variant.spec)
        assert all(isinstance(line, str) for line in lever.code(variant.spec, device))
    for group in lever.ladder_groups:
        assert isinstance(lever.not_tried(group, spec, device, workload), str)


@pytest.mark.parametrize("backend", all_backends(), ids=lambda backend: backend.name)
def test_a_backend_owns_every_name_it_expands_to(backend):
    for device in (CPU, GPU):
        names = backend.expand(device)
        assert all(backend.owns(name) for name in names), names


@pytest.mark.parametrize("base", BASES, ids=BASE_IDS)
@pytest.mark.parametrize("backend", all_backends(), ids=lambda backend: backend.name)
def test_a_backend_says_why_it_cannot_run_a_configuration_or_nothing(backend, base):
    device, workload, mode = base
    for name in backend.expand(device):
        spec = replace(_base(*base), backend=name)
        reason = backend.unsupported(spec, device, workload)
        assert reason is None or (isinstance(reason, str) and reason), name
