"""The optimization search, driven by injected measurements: which stacks it builds from what
was measured, how it treats a lever that breaks the model, and how the budget stops it."""

from dataclasses import replace

import numpy as np
import pytest

from accelbench import devices
from accelbench.core.result import Result
from accelbench.core.stats import Measurement
from accelbench.engine.rounds import merge
from accelbench.engine.runner import make_spec
from accelbench.levers import find_lever, label, ladder_groups
from accelbench.workflows.optimize import Tolerance, assess, recommend
from accelbench.workflows.search import Budget, Search
from accelbench.workloads import get_workload

GPU = devices.Device(
    "cuda:0",
    "cuda",
    True,
    "",
    dtypes=devices.DtypeSupport(fp16=True, bf16=True, tf32=True),
    backend=devices.BACKENDS["cuda"],
)
SEED, RESNET = get_workload("seed-cnn"), get_workload("resnet50")
CLOSE = {"max_rel_error": 0.001, "top1_agreement": 1.0}
INT8 = {"max_rel_error": 0.02, "top1_agreement": 0.99}  # quantization costs some accuracy


def _result(spec, rate, seed, spread=0.01):
    """One process's measurement of `rate` samples/s: the process `spread` off, its 12 samples
    1%."""
    rng = np.random.default_rng(seed)
    seconds = spec.batch_size * spec.steps_per_block / rate * (1 + spread * rng.standard_normal())
    samples = tuple(seconds * (1 + 0.01 * rng.standard_normal(12)))
    plain = spec.precision == "fp32" and not spec.levers and spec.backend == "torch"
    drift = {} if plain else {"drift": INT8 if spec.precision == "int8" else CLOSE}
    result = Result(spec=spec, status="ok", measurement=Measurement(samples), metrics=drift)
    return merge(None, result, seed)


class FakeBench:
    """Measures a spec as `rate(spec)` says; None is an error (the lever broke the model).
    Each measurement takes `seconds` on a fake clock, or stops at its timeout."""

    def __init__(self, rate, seconds=10.0, spread=0.01, verdict=""):
        self.rate, self.seconds, self.now, self.specs = rate, seconds, 0.0, []
        self.spread = spread  # how far a process lands from `rate`
        self.verdict = verdict  # fp32 eager's verdict ("launch-bound"), where it has one
        self.processes = []  # the specs given a process beyond their first

    def clock(self):
        return self.now

    def measure(self, rung, timeout, target=None):
        self.now += min(self.seconds, timeout)
        self.specs.append(rung.spec)
        if timeout < self.seconds:
            return Result(spec=rung.spec, status="timeout", error=f"no result within {timeout} s")
        rate = self.rate(rung.spec)
        if rate is None:
            return Result(spec=rung.spec, status="error", error="RuntimeError: view size is not "
                          "compatible with input tensor's size and stride")  # fmt: skip
        result = _result(rung.spec, rate, seed=len(self.specs), spread=self.spread)
        m = result.measurement
        if target is not None and m.repeat / min(m.samples) < target:  # as the worker stops
            result = replace(result, metrics={**result.metrics, "gave_up_below": target})
        if self.verdict and "drift" not in result.metrics:  # fp32 eager: no drift
            verdict = {"kind": self.verdict, "explanation": self.verdict}
            result = replace(result, metrics={**result.metrics, "verdict": verdict})
        return result

    def more(self, rung, before, timeout):
        """One more process of a variant, merged with its earlier ones (engine/rounds)."""
        self.processes.append(rung.spec)
        latest = self.measure(rung, timeout)
        verdict = {k: v for k, v in latest.metrics.items() if k == "verdict"}  # each its own
        return merge(before, replace(latest, metrics=verdict), len(self.specs))


def _search(workload, mode, rate, budget=1e9, groups=None, seconds=10.0, spread=0.01,
            verdict=""):  # fmt: skip
    bench = FakeBench(rate, seconds, spread, verdict)
    base = make_spec(workload, GPU, mode=mode)
    search = Search(
        base, GPU, workload, groups or ladder_groups(), Tolerance(), bench.measure,
        lambda spec: None if not (spec.precision == "fp16" and spec.lever("cuda_graphs", False)
                                  and spec.mode == "train") else "fp16 training's GradScaler",
        Budget(budget, bench.clock), more=bench.more,
    )  # fmt: skip
    return search.run(), bench


def _seed_cnn_on_an_h200(spec):
    """seed 000's CNN training, shaped on what the H200 measured (BENCHMARKS.md)."""
    if spec.lever("channels_last", False):
        return None  # its forward calls x.view(), which a channels_last tensor cannot take
    rate = 27.0
    graphs = spec.lever("cuda_graphs", False)
    if graphs:
        rate = 101.0 * (1.14 if spec.precision == "tf32" else 1.0)
        rate *= 1.24 if spec.lever("compile", "") == "default" else 1.0
    elif spec.lever("compile", "") == "reduce-overhead":
        rate = 34.0
    elif spec.precision in ("fp16", "bf16"):
        rate = 21.0  # launch-bound: a lower precision only adds casts
    return rate * spec.batch_size / 64**0.5 / 8  # a larger batch pays a little


def test_a_launch_bound_step_has_graphs_tried_first_and_each_lever_on_the_stack():
    outcome, bench = _search(SEED, "train", _seed_cnn_on_an_h200, verdict="launch-bound")
    names = [t.rung.name for t in outcome.trials]
    assert names[:2] == ["fp32 eager", "cuda_graphs"]  # what relieves the launches, first
    assert "tf32 + cuda_graphs" in names  # a precision once the launches are captured
    assert "tf32 + compile + cuda_graphs" in names  # compile, which loses alone, inside a graph
    assert not any(t.rung.name in ("tf32", "compile") for t in outcome.trials)  # never alone
    stacked = [t.rung.name for t in outcome.trials if t.phase == "stack"]
    assert stacked[-1] == "tf32 + compile + cuda_graphs"  # its set-up is costly: once, last
    verdicts = assess([t.rung for t in outcome.trials], [t.result for t in outcome.trials],
                      Tolerance())  # fmt: skip
    chosen = recommend(verdicts)
    assert chosen.rung.name == "tf32 + compile + cuda_graphs"
    assert chosen.speedup.ratio == pytest.approx(101 * 1.14 * 1.24 / 27, rel=0.03)
    path = "\n".join(outcome.path())
    assert "the baseline's step is launch-bound: CUDA graphs first" in path
    # compute-bound, the precisions come first, the 16-bit ones (bf16 leading) before tf32
    outcome, _ = _search(SEED, "train", _seed_cnn_on_an_h200, verdict="compute-bound")
    assert [t.rung.name for t in outcome.trials][1:4] == ["bf16", "fp16", "tf32"]


def test_a_lever_that_breaks_the_model_is_a_finding_left_out_of_every_stack():
    outcome, bench = _search(SEED, "train", _seed_cnn_on_an_h200)
    broken = [t for t in outcome.trials if t.rung.name == "channels_last"]
    assert broken and broken[0].outcome.startswith("does not apply to this model: RuntimeError")
    with_it = [s for s in bench.specs if s.lever("channels_last", False)]
    assert len(with_it) == 1  # measured once, then never again


def test_in_training_bf16_goes_on_the_stack_over_a_faster_fp16_and_wins_compiled():
    """resnet50 training on an H200: fp16 alone beats bf16, bf16 wins once compiled."""

    def rate(spec):
        low = {"fp32": 1.0, "tf32": 2.4, "fp16": 3.4, "bf16": 2.8}[spec.precision]
        if spec.lever("compile", ""):
            low *= {"fp16": 1.9, "bf16": 2.45}.get(spec.precision, 1.15)
        if spec.lever("compile", "") == "reduce-overhead":
            low *= 0.97  # no faster than compile's default here: the search must keep default
        if spec.lever("channels_last", False):
            low *= 1.05 if spec.precision in ("fp16", "bf16") else 0.97
        return 900.0 * low

    groups = ("precision", "channels_last", "compile")
    outcome, _ = _search(RESNET, "train", rate, groups=groups, verdict="compute-bound")
    verdicts = assess([t.rung for t in outcome.trials], [t.result for t in outcome.trials],
                      Tolerance())  # fmt: skip
    chosen = recommend(verdicts)
    assert chosen.rung.name == "bf16 + channels_last + compile"
    assert chosen.speedup.ratio == pytest.approx(2.8 * 1.05 * 2.45, rel=0.05)
    assert "   bf16 goes on rather than fp16, faster here (1.2" in "\n".join(outcome.path())
    # on inference the fastest goes on
    outcome, _ = _search(RESNET, "infer", rate, groups=groups, verdict="compute-bound")
    assert "fp16 + channels_last + compile" in [t.rung.name for t in outcome.trials]


def test_a_larger_batch_is_offered_but_never_recommended():
    outcome, _ = _search(SEED, "train", _seed_cnn_on_an_h200, groups=("cuda_graphs", "batch"))
    offers = [t for t in outcome.trials if t.phase == "offer"]
    names = [t.rung.name for t in offers][:2]
    assert names == ["cuda_graphs + batch 128", "cuda_graphs + batch 256"]
    verdicts = assess([t.rung for t in outcome.trials], [t.result for t in outcome.trials],
                      Tolerance())  # fmt: skip
    assert recommend(verdicts).rung.name == "cuda_graphs"  # the faster offers stay offers


def test_the_budget_stops_the_search_and_lists_what_was_not_tried():
    outcome, bench = _search(SEED, "train", _seed_cnn_on_an_h200, budget=35.0)
    # 10 s a process: fp32 eager's three, then the next starts with 5 s left, and stops
    assert len(bench.specs) == 4 and bench.processes == [bench.specs[0]] * 2
    assert outcome.trials[-1].outcome == "not finished: the search's budget ran out"
    assert outcome.not_tried and all("budget" in why for _, why in outcome.not_tried)
    assert outcome.wall_s == pytest.approx(35.0)


def test_a_costly_alternative_is_left_out_when_the_budget_has_no_room_for_it():
    outcome, _ = _search(SEED, "train", _seed_cnn_on_an_h200, budget=200.0, verdict="launch-bound")
    skipped = dict(outcome.not_tried)
    why = skipped["tf32 + compile:max-autotune-no-cudagraphs + cuda_graphs"]
    autotune = "max-autotune searches kernels for minutes"
    assert why == f"budget: expected about 100 s ({autotune}), 50 s left"  # 10x the stack's


def test_a_failed_baseline_ends_the_search():
    outcome, bench = _search(SEED, "train", lambda spec: None)
    assert len(outcome.trials) == 1 and not outcome.trials[0].measured


def test_an_emulated_precision_is_tried_last_and_only_where_the_budget_holds_it():
    from accelbench.levers import find_lever

    cpu = replace(
        GPU, name="cpu", kind="cpu",
        dtypes=devices.DtypeSupport(fp16=True, bf16=True, tf32=False, emulated=("fp16",)),
    )  # fmt: skip
    base = make_spec(SEED, cpu, mode="infer")
    costs = {v.name: v.cost for v in find_lever("precision").variants(base, cpu, SEED)}
    assert costs == {"fp16": 10.0, "bf16": 1.0}
    bench = FakeBench(lambda spec: 10.0, seconds=10.0)
    search = Search(
        base, cpu, SEED, ("precision",), Tolerance(), bench.measure, lambda spec: None,
        Budget(60.0, bench.clock),
    )  # fmt: skip
    outcome = search.run()
    assert [t.rung.name for t in outcome.trials] == ["fp32 eager", "bf16"]
    why = "cpu has no fp16 instructions: PyTorch emulates it, slowly"
    assert ("fp16", f"budget: expected about 100 s ({why}), 20 s left") in outcome.not_tried


def test_an_emulated_precision_is_costed_against_one_process_of_fp32_eager():
    # fp32 eager's three processes make a wall of 30 s; the emulated variant's one process is
    # expected at ten times one of them (100 s), not ten times all three (300 s)
    cpu = replace(
        GPU, name="cpu", kind="cpu",
        dtypes=devices.DtypeSupport(fp16=True, bf16=False, tf32=False, emulated=("fp16",)),
    )  # fmt: skip
    bench = FakeBench(lambda spec: 10.0, seconds=10.0)
    search = Search(
        make_spec(SEED, cpu, mode="infer"), cpu, SEED, ("precision",), Tolerance(),
        bench.measure, lambda spec: None, Budget(200.0, bench.clock), more=bench.more,
    )  # fmt: skip
    outcome = search.run()
    assert [t.rung.name for t in outcome.trials] == ["fp32 eager", "fp16"], outcome.not_tried
    assert bench.processes[:2] == [outcome.trials[0].rung.spec] * 2  # eager's 2nd and 3rd


def _generating(floor_share):
    """FakeBench's measurement as a generation whose decode step's memory floor is
    `floor_share` of its median step (as analysis/bandwidth writes it)."""

    def measure(rung, timeout, bench):
        result = bench.measure(rung, timeout)
        step = 0.01
        generation = {
            "prompt_length": 128, "new_tokens": 32, "batch_size": 1, "generated_tokens": 32,
            "prefill_s": [0.01], "decode_s": [31 * step], "token_p50_s": step,
            "decode_memory_floor_s": floor_share * step, "decode_compute_floor_s": 1e-6,
            "decode_floor_share": floor_share,
        }  # fmt: skip
        return replace(result, metrics={**result.metrics, "generation": generation})

    return measure


def _generate_search(rate, floor_share, budget):
    bench = FakeBench(rate)
    workload = get_workload("gpt2-tiny")
    base = make_spec(workload, GPU, mode="generate")
    measure = _generating(floor_share)
    search = Search(
        base, GPU, workload, ("precision", "kv_cache", "compile"), Tolerance(),
        lambda rung, timeout, target: measure(rung, timeout, bench), lambda spec: None,
        Budget(budget, bench.clock), timeout=60.0, more=bench.more,
    )  # fmt: skip
    return search.run()


def _decoding_on_an_h200(spec):
    """llama-1b's generation as the H200 measured it (BENCHMARKS.md, batch L): eager decode is
    host-bound, a static cache with CUDA graphs about 7x, fp16 1.4x."""
    if spec.lever("kv_cache", "") == "static":
        return 7.0
    return 1.4 if spec.precision in ("fp16", "bf16") else 1.0


def test_where_the_host_bounds_decode_the_static_cache_goes_first_and_bf16_on_it():
    outcome = _generate_search(_decoding_on_an_h200, floor_share=0.05, budget=45.0)
    names = [t.rung.name for t in outcome.trials]
    # 10 s a process: fp32 eager's three leave 15 s, all held for the static cache's trial
    assert names == ["fp32 eager", "static-cache + compile:reduce-overhead"]
    held = "a static KV cache, tried first, and confirming the recommendation"
    path = outcome.path()
    assert path[1] == (
        f"   15 s of the budget held for {held} (a static KV cache: a costly set-up, tried once "
        "on fp32 eager)"
    )
    assert path[2] == (
        "   the baseline's decode step is bound by the host (its larger floor is 5% of the "
        "step): a static KV cache first, costly as it is"
    )
    assert ("bf16", "budget: the rest is held for confirming the recommendation") in (
        outcome.not_tried
    )
    # with room, the precisions are judged on the static cache, where bf16 halves the bytes
    outcome = _generate_search(_decoding_on_an_h200, floor_share=0.05, budget=200.0)
    names = [t.rung.name for t in outcome.trials]
    assert names[:3] == [
        "fp32 eager", "static-cache + compile:reduce-overhead",
        "bf16 + static-cache + compile:reduce-overhead",
    ]  # fmt: skip
    assert names.count("static-cache + compile:reduce-overhead") == 1  # never tried again


def test_a_costly_set_up_is_held_budget_and_tried_once_last_on_the_best_stack():
    # where memory bandwidth bounds decode: the precisions first, the static cache on the best
    outcome = _generate_search(_decoding_on_an_h200, floor_share=0.8, budget=200.0)
    names = [t.rung.name for t in outcome.trials]
    assert names[1:4] == ["bf16", "fp16", "tf32"]
    assert names[4] == "fp16 + static-cache + compile:reduce-overhead"
    path = "\n".join(outcome.path())
    assert (
        "the baseline's decode step is bound by memory bandwidth (its larger floor is 80% of the "
        "step): precision first"
    ) in path
    assert "a static KV cache, tried last, and confirming" in path
    assert "tried once on the best stack" in path


def test_a_variant_the_budget_cut_short_is_not_called_failed():
    outcome = _generate_search(_decoding_on_an_h200, floor_share=0.4, budget=65.0)
    cut = [t for t in outcome.trials if t.budget_cut]
    assert [t.rung.name for t in cut] == ["tf32 + static-cache + compile:reduce-overhead"]
    not_tried = [f"not tried: {name}: {why}" for name, why in outcome.not_tried]
    said = "\n".join(outcome.path() + not_tried)
    assert "(alternative, because another precision on the finished stack): not finished" in said
    assert "failed" not in said  # it was not measured, so it did not fail


def test_on_generate_the_search_leaves_out_levers_that_do_not_generate():
    bench = FakeBench(_decoding_on_an_h200)
    workload = get_workload("gpt2-tiny")
    measure = _generating(0.05)
    search = Search(
        make_spec(workload, GPU, mode="generate"), GPU, workload,
        ("precision", "kv_cache", "cuda_graphs"), Tolerance(),
        lambda rung, timeout, target: measure(rung, timeout, bench), lambda spec: None,
        Budget(1e9, bench.clock),
    )  # fmt: skip
    outcome = search.run()
    assert outcome.trials and not any(s.lever("cuda_graphs", False) for s in bench.specs)
    assert not any("cuda_graphs" in name for name, _ in outcome.not_tried)  # optimize lists it


def test_a_close_gain_gets_more_processes_and_a_close_loss_does_not():
    def rate(spec):
        if spec.precision == "tf32":
            return 108.0  # a real 8% gain, hidden at first by processes 6% apart
        return 90.0 if spec.lever("cudnn_benchmark", False) else 100.0

    outcome, bench = _search(RESNET, "infer", rate, groups=("precision", "cudnn_benchmark"),
                             spread=0.06)  # fmt: skip
    raced = {label(spec) for spec in bench.processes}
    assert "infer tf32 b128" in raced  # the gain was close, and worth settling
    assert not any("cudnn" in name for name in raced)  # a loss is not worth a process
    tf32 = next(t for t in outcome.trials if t.rung.name == "tf32")
    assert 1 < tf32.result.measurement.processes <= 4


def _llama_search(bf16, budget, spread=0.1, bf16_seconds=10.0, bf16_processes=9):
    """llama-1b's generate search of issue 39, on the fake clock (10 s a process, bf16's
    `bf16_seconds`): fp32 eager's processes 10% apart, bf16 `bf16` times fp32 (its processes
    after the first `bf16_processes` fail), the static cache 3.5x."""
    bf16_runs = []

    def rate(spec):
        if spec.lever("kv_cache", "") == "static":
            return 3.5 * (bf16 if spec.precision == "bf16" else 1.0)
        if spec.precision == "bf16":
            bf16_runs.append(spec)
            return bf16 if len(bf16_runs) <= bf16_processes else None
        return bf16 if spec.precision == "fp16" else 1.0

    bench = FakeBench(rate, spread=spread)
    measure = _generating(0.8)  # memory-bound decode: precision first

    def slower(rung):  # bf16's process on the fake clock, beyond FakeBench's 10 s
        is_bf16 = rung.spec.precision == "bf16" and not rung.spec.levers
        bench.now += bf16_seconds - bench.seconds if is_bf16 else 0.0

    def first(rung, timeout, target):
        slower(rung)
        return measure(rung, timeout, bench)

    def more(rung, before, timeout):
        slower(rung)
        return bench.more(rung, before, timeout)

    workload = get_workload("gpt2-tiny")
    search = Search(
        make_spec(workload, GPU, mode="generate"), GPU, workload, ("precision", "kv_cache"),
        Tolerance(), first, lambda spec: None, Budget(budget, bench.clock), timeout=60.0,
        more=more, threshold=0.02,
    )  # fmt: skip
    return search.run(), bench


def _bf16(outcome):
    return next(t for t in outcome.trials if t.rung.name == "bf16")


def test_an_undecided_trial_is_measured_again_before_the_search_decides():
    # 95 s: fp32 eager's three processes leave 65, of which 47 s are held (26 s of them for
    # the static cache); beside the whole hold bf16's second process had no room (issue 39)
    outcome, bench = _llama_search(bf16=1.34, budget=95.0)
    bf16 = _bf16(outcome)
    assert bf16.raced[0].startswith("undecided after 1 process: measured again, ")
    assert bf16.result.measurement.processes in (2, 3)
    # before the search decided: its processes ran before the next variant's first
    n, order = bf16.result.measurement.processes, [label(spec) for spec in bench.specs]
    assert order[3 : 3 + n] == ["generate bf16 b1"] * n and order[3 + n] != order[3]
    line = next(x for x in outcome.path() if x.startswith(" 2. bf16 "))
    assert f"({bf16.raced[0]})" in line and "kept over fp32 eager" in line
    # the set-up's hold stayed: the static cache was still tried, on the bf16 stack
    assert "bf16 + static-cache + compile:reduce-overhead" in [t.rung.name for t in outcome.trials]


def test_a_clear_gain_or_a_clear_loss_is_not_measured_again():
    for ratio in (2.0, 0.6):  # decided on one process: a gain beyond the threshold, a loss
        outcome, bench = _llama_search(bf16=ratio, budget=1e9, spread=0.01)
        bf16 = _bf16(outcome)
        assert bf16.raced == [] and bf16.result.measurement.processes == 1
        assert "undecided" not in "\n".join(outcome.path())


def test_an_undecided_trial_the_budget_has_no_room_for_says_so():
    # 110 s: fp32 eager leaves 80, 55 held (31 s of them for the static cache); bf16's 25 s
    # process leaves 55, 24 s beside the static cache's part: no room for a second
    outcome, bench = _llama_search(bf16=1.34, budget=110.0, bf16_seconds=25.0)
    bf16 = _bf16(outcome)
    assert bf16.result.measurement.processes == 1
    assert bf16.raced == [
        "undecided after 1 process: not measured again (budget: a process takes about 25 s, "
        "24 s left, beside 31 s held for the costly set-ups, tried last)"
    ]
    line = next(x for x in outcome.path() if x.startswith(" 2. bf16 "))
    assert line.endswith(f"left out: within noise of fp32 eager: {bf16.judged.then.text()} "
                         f"({bf16.raced[0]})")  # fmt: skip
    # the hold stayed for the static cache, tried on the stack without bf16
    assert "static-cache + compile:reduce-overhead" in [t.rung.name for t in outcome.trials]


def test_an_undecided_trial_whose_next_process_fails_says_so():
    outcome, _ = _llama_search(bf16=1.34, budget=95.0, bf16_processes=1)
    bf16 = _bf16(outcome)
    assert bf16.raced == [
        "undecided after 1 process: measured again, but bf16's next process ended without a figure"
    ]


# --- a backend switch is a variant of its own; int8 is judged against it; threads on the CPU
# The host's facts injected: no test reads this machine's cores or instruction set.
HOST = replace(
    GPU, name="cpu", kind="cpu", backend=devices.BACKENDS["cpu"], cores=6,
    dtypes=devices.DtypeSupport(fp16=True, bf16=True, tf32=False),
)  # fmt: skip
ORT_FP32, ORT_INT8 = "onnxruntime-cpu fp32", "onnxruntime-cpu int8"


def _users_cnn_on_a_2_core_vm(spec):
    """The user's CNN of issue 27: ONNX Runtime fp32 6.70x, int8 on it 10.23x, one thread 3x."""
    if spec.backend == "onnxruntime-cpu":
        return 1023.0 if spec.precision == "int8" else 670.0
    if spec.lever("channels_last", False):
        return None
    rate = 300.0 if spec.lever("threads", 0) == 1 else 100.0
    return rate * (0.9 if spec.precision != "fp32" else 1.0)


def _cpu_search(rate, groups, check=lambda spec: None, device=HOST, budget=1e9):
    bench = FakeBench(rate)
    search = Search(
        make_spec(SEED, device, mode="infer"), device, SEED, groups, Tolerance(), bench.measure,
        check, Budget(budget, bench.clock), more=bench.more,
    )  # fmt: skip
    outcome = search.run()
    trials = outcome.trials
    at = {id(t): i for i, t in enumerate(trials)}
    references = [at.get(id(t.parent)) if t.parent is not None else None for t in trials]
    verdicts = assess([t.rung for t in trials], [t.result for t in trials], Tolerance(),
                      references)  # fmt: skip
    return outcome, verdicts, bench


def test_int8_is_judged_against_onnxruntime_fp32_and_the_path_multiplies_to_the_total():
    from accelbench.workflows.optimize import gain_path, gain_text

    outcome, verdicts, _ = _cpu_search(_users_cnn_on_a_2_core_vm, ("backend", "int8"))
    by_name = {v.rung.name: v for v in verdicts}
    assert list(by_name) == ["fp32 eager", ORT_FP32, ORT_INT8]  # the switch is a variant
    fp32, int8 = by_name[ORT_FP32], by_name[ORT_INT8]
    assert fp32.speedup.ratio == pytest.approx(6.70, rel=0.03) and fp32.step is None
    assert verdicts[int8.reference] is fp32  # int8's own gain is over ONNX Runtime's fp32
    assert int8.step.ratio == pytest.approx(1023 / 670, rel=0.03) and int8.step.low > 1
    assert int8.speedup.ratio == pytest.approx(10.23, rel=0.03)  # the table's figure stays
    chosen = recommend(verdicts)
    assert chosen is int8
    factors = gain_path(verdicts, chosen)
    assert [(f.adds, f.over) for f in factors] == [
        (ORT_FP32, "fp32 eager"), ("int8", ORT_FP32),
    ]  # fmt: skip
    product = factors[0].speedup.ratio * factors[1].speedup.ratio
    assert product == pytest.approx(chosen.speedup.ratio, rel=1e-9)
    text = gain_text(factors, chosen.speedup)
    assert text == (
        f"{ORT_FP32} {factors[0].speedup.ratio:.2f}x, then int8 "
        f"{factors[1].speedup.ratio:.2f}x = {chosen.speedup.ratio:.2f}x over fp32 eager"
    )
    said = "\n".join(outcome.path())
    assert f"{ORT_INT8} (alone): pays over {ORT_FP32}: 1.5" in said
    assert f"max rel. error 0.02 against {ORT_FP32}'s 0.001" in said  # its accuracy cost


def test_int8_no_faster_than_onnxruntime_fp32_leaves_fp32_the_recommendation():
    def rate(spec):
        return 670.0 if spec.backend != "torch" else 100.0  # int8 gains nothing on the switch

    outcome, verdicts, _ = _cpu_search(rate, ("int8",))  # int8 asked: its reference runs too
    names = [v.rung.name for v in verdicts]
    assert names == ["fp32 eager", ORT_FP32, ORT_INT8]
    int8 = verdicts[2]
    assert int8.speedup.low > 1 and not int8.step.significant  # 6.7x over eager, ~1x its own
    assert int8.note.startswith(f"does not pay over {ORT_FP32}")
    assert recommend(verdicts).rung.name == ORT_FP32
    said = "\n".join(outcome.path())
    assert f" 3. {ORT_INT8} (alone): within noise over {ORT_FP32}" in said


def test_the_thread_count_is_tried_on_the_cpu_from_the_injected_core_count():
    outcome, verdicts, bench = _cpu_search(_users_cnn_on_a_2_core_vm, ("threads", "precision"))
    threads = [t.rung.name for t in outcome.trials if t.rung.group == "threads"]
    assert threads == ["1 thread", "3 threads", "6 threads"]  # 1, half, all of 6 cores
    one = next(v for v in verdicts if v.rung.name == "1 thread")
    assert one.speedup.ratio == pytest.approx(3.0, rel=0.03)
    assert recommend(verdicts).rung.name == "1 thread"
    path = "\n".join(outcome.path())
    # the host's setting first: every later figure is taken on it
    assert " 2. 1 thread (stack, because threads, on the best stack so far): kept over " in path
    assert " 5. 1 thread + bf16 (stack, because precision, on the best stack so far)" in path
    two = replace(HOST, cores=2)
    assert [v.name for v in find_lever("threads").variants(bench.specs[0], two, SEED)] == [
        "1 thread", "2 threads",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("device", "reason"),
    [
        (GPU, "PyTorch's CPU threads only feed cuda:0, which runs the model"),
        (replace(HOST, cores=1), "one core: there is no other thread count to try"),
        (replace(HOST, cores=0), "the OS does not say how many cores"),
    ],
)
def test_the_thread_count_not_tried_says_why(device, reason):
    from accelbench.workflows.optimize import levers_not_tried

    base = make_spec(SEED, device, mode="infer")
    assert reason in levers_not_tried(base, device, SEED, ("threads",))["threads"]
    assert not find_lever("threads").variants(base, device, SEED)


def test_every_lever_not_tried_is_listed_with_its_reason():
    missing = "onnxruntime is not installed: pip install 'accelbench[export]'"

    def check(spec):
        return missing if spec.backend != "torch" else None

    outcome, _, _ = _cpu_search(
        _users_cnn_on_a_2_core_vm, ("backend", "int8", "compile", "autotune", "threads"), check
    )
    skipped = dict(outcome.not_tried)
    assert skipped[ORT_FP32] == skipped[ORT_INT8] == f"cannot run here: {missing}"
    # max-autotune is an alternative on a stack with torch.compile, which did not pay here
    assert skipped["autotune"] == (
        "tried only on a stack that has the lever it refines, and none had it"
    )
    # a budget that ends after fp32 eager: every lever left says so
    outcome, _, _ = _cpu_search(_users_cnn_on_a_2_core_vm, ("threads", "int8"), budget=30.0)
    assert {why for _, why in outcome.not_tried} == {"budget: the search's time was used up"}
    assert {name for name, _ in outcome.not_tried} >= {"1 thread", ORT_FP32}


def test_a_backend_switch_is_named_by_its_backend_in_a_stack():
    from accelbench.workflows.optimize import stack_name

    base = make_spec(SEED, HOST, mode="infer")
    ort = replace(base, backend="onnxruntime-cpu")
    assert stack_name(ort, base) == ORT_FP32
    assert stack_name(replace(ort, precision="int8"), ort) == "int8"
    assert stack_name(replace(base, precision="bf16"), base) == "bf16"


def test_the_console_and_json_say_the_same_factors():
    from accelbench.cli.optimize import _report
    from accelbench.engine.measure import StopRule
    from accelbench.render.console import optimize_table
    from accelbench.workflows.optimize_plan import Ladder, Searched
    from accelbench.workloads import WorkloadRef

    outcome, verdicts, bench = _cpu_search(_users_cnn_on_a_2_core_vm, ("backend", "int8"))
    searched, chosen = Searched(outcome, verdicts), recommend(verdicts)
    ladder = Ladder(
        ref=WorkloadRef("seed-cnn"), workload=SEED, device=HOST, base=bench.specs[0],
        groups=("backend", "int8"), stop=StopRule(), tolerance=Tolerance(), timeout=60.0,
        budget=1e9, not_tried={"autotune": "opt-in: tried only when --levers names it"},
    )  # fmt: skip
    report = _report(searched, chosen, ladder, "o.db")
    gain = report["recommended_gain"]
    assert gain.startswith(f"{ORT_FP32} 6.") and gain.endswith("x over fp32 eager")
    assert [p["adds"] for p in report["recommended_path"]] == [ORT_FP32, "int8"]
    int8 = report["variants"][2]
    assert int8["over"] == ORT_FP32 and int8["speedup_over"]["ratio"] > 1.4
    assert report["variants"][1]["over"] == "fp32 eager"
    shown = " ".join(optimize_table(searched, chosen, ladder, width=200).split())
    assert f"recommendation: {ORT_INT8}, " in shown
    assert f"where the gain comes from: {gain}" in shown
    assert "not tried: autotune: opt-in: tried only when --levers names it" in shown


class ScriptedBench(FakeBench):
    """Each process of a variant at the rate its script gives, in order: `rates[name][i]` for
    its process i; a name whose script is a string is unsupported, for that reason."""

    def __init__(self, rates):
        super().__init__(None)
        self.rates, self.count = rates, {}

    def measure(self, rung, timeout, target=None):
        self.now += self.seconds
        self.specs.append(rung.spec)
        script = self.rates[rung.name]
        if isinstance(script, str):
            return Result(spec=rung.spec, status="unsupported", error=script)
        i = self.count[rung.name] = self.count.get(rung.name, -1) + 1
        return _result(rung.spec, script[i], seed=len(self.specs), spread=0.0)


def _scripted(rates, groups, workload=SEED, device=HOST, mode="infer"):
    bench = ScriptedBench(rates)
    search = Search(
        make_spec(workload, device, mode=mode), device, workload, groups, Tolerance(),
        bench.measure, lambda spec: None, Budget(1e9, bench.clock), more=bench.more,
    )  # fmt: skip
    outcome = search.run()
    trials = outcome.trials
    at = {id(t): i for i, t in enumerate(trials)}
    references = [at.get(id(t.parent)) if t.parent is not None else None for t in trials]
    verdicts = assess([t.rung for t in trials], [t.result for t in trials], Tolerance(),
                      references)  # fmt: skip
    return outcome, verdicts, bench


def _line(path, name):
    return next(line for line in path if line[4:].startswith(f"{name} ("))


ONE_THREAD = " 2. 1 thread (stack, because threads, on the best stack so far): "


@pytest.mark.parametrize("slow", [60.0, 40.0])
def test_the_path_shows_the_tables_figures_with_every_process_in(slow):
    """fp32 eager's fourth process, `slow` samples/s, lands while 3 threads races it, after
    1 thread was judged to pay on the first three. The path shows every figure as the table
    does, with all four in; where that would have decided otherwise (with 40, 1 thread's
    interval holds 1.0), the figure it was decided on as well, so that its history stays."""
    from accelbench.cli.optimize import _report
    from accelbench.engine.measure import StopRule
    from accelbench.render.console import optimize_table
    from accelbench.workflows.optimize_plan import Ladder, Searched
    from accelbench.workloads import WorkloadRef

    rates = {
        "fp32 eager": [100.0, 104.0, 96.0, slow], "1 thread": [300.0] * 3,
        "3 threads": [106.0] * 4, "6 threads": [101.0] * 4,
    }  # fmt: skip
    outcome, verdicts, bench = _scripted(rates, ("threads",))
    assert bench.count["fp32 eager"] == 3  # a fourth process, after 1 thread was judged
    searched = Searched(outcome, verdicts)
    path = searched.path()
    for v in verdicts[1:]:  # each figure is the table's
        assert f": {v.speedup.text()}" in _line(path, v.rung.name) or (
            f"with every process in, {v.speedup.text()}" in _line(path, v.rung.name)
        )
    one = next(v for v in verdicts if v.rung.name == "1 thread")
    then = outcome.trials[1].judged.then  # the figure it was judged on, three processes in
    assert then.low > 1.0 and then.text() != one.speedup.text()
    said = _line(path, "1 thread")
    if slow == 60.0:  # it still pays: the final figure alone
        assert said == f"{ONE_THREAD}kept over fp32 eager: {one.speedup.text()}"
    else:
        assert not one.speedup.significant
        assert said == (
            f"{ONE_THREAD}kept over fp32 eager: decided on {then.text()} at the time; with "
            f"every process in, {one.speedup.text()}, within noise"
        )
        assert recommend(verdicts) is verdicts[0]
    # --json carries the same path, and each variant's outcome as the path says it
    ladder = Ladder(
        ref=WorkloadRef("seed-cnn"), workload=SEED, device=HOST, base=bench.specs[0],
        groups=("threads",), stop=StopRule(), tolerance=Tolerance(), timeout=60.0, budget=1e9,
        not_tried={},
    )  # fmt: skip
    report = _report(searched, recommend(verdicts), ladder, "o.db")
    assert report["path"] == path
    assert said.endswith(report["variants"][1]["outcome"])
    shown = " ".join(optimize_table(searched, recommend(verdicts), ladder, width=400).split())
    assert all(" ".join(line.split()) in shown for line in path)


def test_a_lever_that_does_not_apply_is_not_called_failed_or_drifted():
    rates = {
        "fp32 eager": [100.0] * 4, "tf32": [150.0] * 4, "fp16": [300.0] * 4,
        "bf16": "cuda:0 runs no bf16 here",
        "fp16 + channels_last": "the model's forward does not take channels_last inputs",
    }  # fmt: skip
    outcome, verdicts, _ = _scripted(rates, ("precision", "channels_last"), device=GPU)
    path = outcome.path()
    assert _line(path, "fp16 + channels_last") == (
        " 5. fp16 + channels_last (stack, because channels_last, on the best stack so far): "
        "does not apply here: the model's forward does not take channels_last inputs"
    )
    assert _line(path, "bf16").endswith("does not apply here: cuda:0 runs no bf16 here")
    said = "\n".join(path + [why for _, why in outcome.not_tried])
    assert "failed" not in said and "drifted" not in said
    assert "   fp16 goes on: the fastest of precision's" in path
    assert recommend(verdicts).rung.name == "fp16"


def test_a_lever_that_pays_less_than_the_keep_threshold_is_left_out_and_said_so():
    """cudnn.benchmark's gain is real but 3%, bf16's 2.8x; the threshold asks for 5%."""

    def rate(spec):
        gain = 2.8 if spec.precision == "bf16" else 1.0
        return 900.0 * gain * (1.03 if spec.lever("cudnn_benchmark", False) else 1.0)

    def search(threshold):
        bench = FakeBench(rate, spread=0.001)
        base = make_spec(RESNET, GPU, mode="train")
        return Search(
            base, GPU, RESNET, ("precision", "cudnn_benchmark"), Tolerance(), bench.measure,
            lambda spec: None, Budget(1e9, bench.clock), more=bench.more, threshold=threshold,
        ).run()  # fmt: skip

    strict, lax = search(0.05), search(0.0)
    kept = {t.rung.name for t in lax.trials if t.outcome.startswith("kept")}
    assert "bf16 + cudnn_benchmark" in kept  # with no threshold, 3% beyond noise is kept
    path = "\n".join(strict.path())
    assert "left out: a gain over bf16, but under the 5% keep threshold: 1.03x [1.0" in path
    assert path.endswith("bf16 confirmed in 3 processes: 2.80x [2.78–2.82] over fp32 eager")
    # fp16 and tf32 cannot reach the threshold's rate: their processes stopped early, and say so
    assert (
        " 3. fp16 (stack, because precision, on the best stack so far): left out: within noise "
        "of fp32 eager: 1.00x [0.98–1.02] (n.s.) (its first process stopped after 12 timed "
        "samples: even the fastest was slower than the keep threshold asks)"
    ) in strict.path()
    trials = lax.trials
    at = {id(t): i for i, t in enumerate(trials)}
    references = [at.get(id(t.parent)) for t in trials]
    verdicts = assess([t.rung for t in trials], [t.result for t in trials], Tolerance(),
                      references)  # fmt: skip
    assert recommend(verdicts).rung.name == "bf16 + cudnn_benchmark"
    assert recommend(verdicts, 0.05).rung.name == "bf16"  # its step over bf16 is too small


def test_a_tight_budget_still_reaches_compile_on_the_best_stack():
    def rate(spec):
        low = {"fp32": 1.0, "tf32": 2.4, "fp16": 3.4, "bf16": 2.8}[spec.precision]
        return 900.0 * low * (2.0 if spec.lever("compile", "") else 1.0)

    # 10 s a process: fp32 eager's three, then 50 s held for compile leave room for two
    outcome, _ = _search(RESNET, "train", rate, budget=100.0, verdict="compute-bound",
                         groups=("precision", "channels_last", "compile"))  # fmt: skip
    names = [t.rung.name for t in outcome.trials]
    assert names[:4] == ["fp32 eager", "bf16", "fp16", "bf16 + compile"]
    assert dict(outcome.not_tried)["tf32"] == (
        "budget: the rest is held for torch.compile, tried last, and confirming the recommendation"
    )
    assert outcome.trials[3].outcome.startswith("kept over bf16: ")
