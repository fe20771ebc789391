"""Mode generate: language-model workloads, prefill and decode timed apart, bytes per token."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace

import pytest
import torch

from accelbench.analysis.bandwidth import kv_cache_bytes, mean_decode_length
from accelbench.analysis.facts import Generation
from accelbench.backends.generate import GenerationLog, Phases, generate_once
from accelbench.core.facts import Facts, check
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.engine.sweep import Sweep
from accelbench.errors import UsageError
from accelbench.levers import check_levers, label
from accelbench.render.console import run_tables
from accelbench.store.db import Store
from accelbench.store.results_file import read_export, write_export
from accelbench.workloads import WorkloadRef, get_workload
from accelbench.workloads.custom import CausalLMWorkload, ModelOptions, load_custom
from accelbench.workloads.llm import KVLayout
from tests.conftest import run_cli

TINY = "gpt2-tiny"


@pytest.fixture(scope="module")
def tiny_model():
    torch.manual_seed(0)
    return get_workload(TINY).build_model().eval()


def _prompt(batch=2, length=12):
    return get_workload(TINY).prompt(torch.Generator().manual_seed(0), batch, length)


def test_exactly_n_tokens_even_past_the_end_token(tiny_model):
    with torch.inference_mode():
        first = generate_once(tiny_model, _prompt(), 6, lambda: None)
        # make the token it generates first its end token: generate() would stop there
        end = int(first.tokens[0, 0])
        tiny_model.config.eos_token_id = end
        tiny_model.generation_config.eos_token_id = end
        again = generate_once(tiny_model, _prompt(), 6, lambda: None)
    assert tuple(again.tokens.shape) == (2, 6) and len(again.token_s) == 5
    assert torch.equal(again.tokens, first.tokens)  # greedy: the same tokens every run


def test_an_injected_clock_shows_prefill_and_each_step_apart(tiny_model):
    ticks = iter([0.0, 3.0, 4.0, 6.0, 10.0])
    events: list[str] = []

    def clock() -> float:
        events.append("clock")
        return next(ticks)

    with torch.inference_mode():
        phases = generate_once(tiny_model, _prompt(), 4, lambda: events.append("sync"), clock)
    assert phases.prefill_s == 3.0  # measured, not a total minus the decode
    assert phases.token_s == (1.0, 2.0, 4.0)
    # every reading follows a synchronization: the first starts on an idle device, the others
    # time work done
    assert events == ["sync", "clock"] * 5


def test_the_hooks_run_after_the_prefill_and_each_step_and_their_time_is_no_steps(tiny_model):
    # the readings after each hook (x.5) start the next step's time: each hook takes 0.5
    ticks = iter([0.0, 3.0, 3.5, 4.5, 5.0, 7.0, 7.5, 11.5, 12.0])
    events: list[str] = []

    def clock() -> float:
        events.append("clock")
        return next(ticks)

    with torch.inference_mode():
        phases = generate_once(
            tiny_model, _prompt(), 4, lambda: events.append("sync"), clock,
            on_first=lambda: events.append("first"), on_step=lambda: events.append("step"),
        )  # fmt: skip
    assert phases.prefill_s == 3.0 and phases.token_s == (1.0, 2.0, 4.0)
    assert events.count("step") == 3  # new_tokens - 1: once after each decode step
    step = ["sync", "clock", "step", "clock"]
    assert events == ["sync", "clock", "sync", "clock", "first", "clock", *step * 3]


def test_kv_cache_bytes_by_hand_and_against_the_real_cache(tiny_model):
    llama = get_workload("llama-1b").kv_layout()
    assert llama == KVLayout(layers=16, kv_heads=8, head_dim=64)
    # 2 (key, value) x 16 layers x 8 KV heads x 64 x 512 positions x 1 sequence x 2 (bf16)
    assert kv_cache_bytes(llama, 512, 1, 2) == 16 * 2**20
    with torch.inference_mode():
        out = tiny_model(input_ids=_prompt(3, 10), use_cache=True)
    cache = out.get("cache") or out.get("past_key_values")
    held = sum(t.nbytes for layer in cache.layers for t in (layer.keys, layer.values))
    assert kv_cache_bytes(get_workload(TINY).kv_layout(), 10, 3, 4) == held


def test_mean_decode_length_is_the_mean_over_the_steps():
    prompt, new = 100, 9
    steps = [prompt + j for j in range(1, new)]  # step j attends over prompt + j positions
    assert mean_decode_length(prompt, new) == statistics.mean(steps)
    with pytest.raises(ValueError):
        mean_decode_length(prompt, 1)


def _log(generations: int, batch: int = 2) -> GenerationLog:
    log = GenerationLog(16, 4, batch, 1000, KVLayout(2, 2, 8), 4)
    for i in range(generations):
        log.add(
            Phases(
                0.1 * (i + 1), (0.01 * (i + 1),) * 3, torch.zeros(batch, 4), torch.zeros(batch, 9)
            )
        )
    return log


def test_the_summary_keeps_the_timed_generations_and_its_arithmetic():
    # two warm-up generations, then three timed: the warm-ups' phases are left out
    timed = Measurement(samples=(1.0, 1.0, 1.0), warmup=(2.0, 2.0), repeat=1)
    found = _log(5).summary(timed)
    assert found["prefill_s"] == pytest.approx([0.3, 0.4, 0.5])
    assert found["decode_s"] == pytest.approx([0.09, 0.12, 0.15])
    assert found["token_p50_s"] == pytest.approx(0.04)
    assert found["decode_tokens_per_s"] == pytest.approx(2 * 3 / 0.12)  # batch x steps / decode
    kv = kv_cache_bytes(KVLayout(2, 2, 8), 16 + 4 / 2, 2, 4)
    assert found["kv_bytes_per_token"] == kv
    assert found["achieved_bandwidth"] == pytest.approx((1000 + kv) / 0.04)
    assert found["generated_tokens"] == 4
    check({"generation": found})


def test_parameter_counts_match_the_built_models():
    for name in ("gpt2", "gpt2-tiny", "llama-1b", "qwen-0.5b"):
        workload = get_workload(name)
        with torch.device("meta"):
            model = workload.build_model()
        assert workload.parameters() == sum(p.numel() for p in model.parameters()), name


def _generate_spec(**fields) -> RunSpec:
    spec = RunSpec(TINY, "cpu", 2, 1, mode="generate")
    return replace(spec.with_mode_args(prompt_length=16, new_tokens=8), **fields)


def test_spec_fields_store_export_and_label(tmp_path):
    plain = RunSpec("mlp", "cpu", 8, 1)
    assert "mode_args" not in plain.to_dict()  # other modes' records read as before
    spec = _generate_spec()
    assert label(spec) == "generate fp32 b2 p16 n8"
    result = Result(spec=spec, status="ok", measurement=Measurement((0.5, 0.4), (0.9,)))
    assert result.samples_per_block == 2 * 8  # tokens: samples/s is tokens/s
    assert Result.from_record(result.to_record()).spec == spec
    with pytest.raises(ValueError, match="new_tokens"):
        bad = {**spec.to_dict(), "mode_args": {"new_tokens": 0, "prompt_length": 16}}
        check_levers(Result.from_record({**result.to_record(), "spec": bad}).spec)
    with Store(tmp_path / "r.db") as store:
        store.save(result)
        store.save(replace(result, spec=plain, uid="other"))
        assert {r.spec for r in store.results()} == {spec, plain}


def test_sweep_multiplies_generate_only_and_refuses_bad_input():
    tiny, mlp = get_workload(TINY), get_workload("mlp")
    sweep = Sweep(
        (WorkloadRef(TINY),),
        ("cpu",),
        modes=("infer", "generate"),
        mode_args=(("prompt_length", (8, 16)),),
    )
    from accelbench.devices import resolve_devices

    specs = [c.spec for c in sweep.configs([tiny], resolve_devices("cpu"))]
    assert [(s.mode, s.mode_arg("prompt_length"), s.mode_arg("new_tokens")) for s in specs] == [
        ("infer", None, None),
        ("generate", 8, tiny.new_tokens),
        ("generate", 16, tiny.new_tokens),
    ]
    assert sweep.stop_rule(tiny, 1, "generate").min_sample_s == 0  # one generation a sample
    for bad, workload, words in (
        (replace(sweep, modes=("infer",)), tiny, "generate or serve only"),
        (replace(sweep, workloads=(WorkloadRef("mlp"),)), mlp, "mlp is not one"),
        (
            replace(sweep, mode_args=(("prompt_length", (250,)), ("new_tokens", (8,)))),
            tiny,
            "more than gpt2-tiny's 256",
        ),
    ):
        with pytest.raises(UsageError, match=words):
            bad.configs([workload], resolve_devices("cpu"))


def test_a_transformers_causal_lm_from_a_factory(tmp_path):
    factory = tmp_path / "lm.py"
    factory.write_text(
        "import transformers\n"
        "def make():\n"
        "    config = transformers.GPT2Config(n_embd=32, n_layer=1, n_head=2, vocab_size=100,"
        " n_positions=64)\n"
        "    return transformers.GPT2LMHeadModel(config)\n"
    )
    workload = load_custom(f"{factory}:make", ModelOptions())
    assert isinstance(workload, CausalLMWorkload)
    assert workload.max_positions == 64 and workload.kv_layout() == KVLayout(1, 2, 16)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("resnet50", "--modes", "generate"), "resnet50 is not one"),
        ((TINY, "--modes", "generate", "--prompt-lengths", "300"), "more than gpt2-tiny's 256"),
        ((TINY, "--modes", "generate", "--new-tokens", "0"), "--new-tokens"),
        ((TINY, "--prompt-lengths", "8"), "--prompt-lengths applies to --modes generate or serve"),
        (
            ("--model", "MODEL", "--input-shape", "4", "--loss", "mse", "--modes", "generate"),
            "is not one",
        ),
    ],
)
def test_bad_generate_input_is_one_line_and_exit_2(tmp_path, args, words):
    model = tmp_path / "net.py"
    model.write_text("import torch\ndef make():\n    return torch.nn.Linear(4, 2)\n")
    args = tuple(f"{model}:make" if a == "MODEL" else a for a in args)
    out = run_cli("run", *args, "--devices", "cpu", "--db", str(tmp_path / "r.db"))
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and words in out.stderr, out.stderr
    assert not (tmp_path / "r.db").exists() or "generate" not in out.stdout


def test_workloads_lists_the_language_models_with_their_parameters():
    out = run_cli("workloads", "--json")
    assert out.returncode == 0, out.stderr
    described = {w["name"]: w["description"] for w in json.loads(out.stdout)}
    for name, count in (("gpt2", "124.4 M"), ("llama-1b", "1.24 B"), ("qwen-0.5b", "494.0 M")):
        assert f"{count} parameters" in described[name]


def test_a_generate_run_stores_its_phases_and_survives_export(tmp_path):
    db = tmp_path / "r.db"
    out = run_cli(
        "run", TINY, "--modes", "generate", "--devices", "cpu", "--batch-sizes", "2",
        "--prompt-lengths", "12", "--new-tokens", "5", "--threads", "1", "--blocks", "6",
        "--json", "--db", str(db),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (record,) = json.loads(out.stdout)["results"]
    assert record["status"] == "ok", record["error"]
    with Store(db) as store:
        (result,) = store.results()
    g = Facts(result.metrics).get(Generation)
    assert g is not None and g.generated_tokens == 5 and len(g.prefill_s) == 6
    assert 0 < g.prefill_median_s < result.measurement.time.median  # a part of the whole
    assert g.decode_median_s is not None and g.token_p50_s <= g.token_p90_s
    assert g.decode_tokens_per_s == pytest.approx(2 * 4 / g.decode_median_s)
    assert result.samples_per_second == pytest.approx(result.measurement.rate.median * 2 * 5)
    assert g.achieved_bandwidth == pytest.approx(g.bytes_per_token / g.tpot_median_s)
    table = run_tables([result], width=250)
    assert "tokens/s" in table and "time to first token" in table
    header = next(line for line in table.splitlines() if "configuration" in line)
    assert "TTFT" in header and "TPOT" in header and "TFLOP/s" not in header
    write_export([result], tmp_path / "out.json")
    (back,) = read_export(tmp_path / "out.json")
    assert back.spec == result.spec and back.metrics == result.metrics
    with Store(tmp_path / "other.db") as other:
        assert other.import_results([back]) == 1
        (imported,) = other.results()
    assert imported.facts.get(Generation) == g and imported.measurement == result.measurement


def test_levers_refuse_generate_with_their_reason_and_optimize_plans_it():
    from accelbench.backends import unsupported
    from accelbench.devices import resolve_devices
    from accelbench.levers import spec_with
    from accelbench.workflows.optimize_plan import OptimizeRequest, plan_ladder

    cpu, tiny = resolve_devices("cpu")[0], get_workload(TINY)
    assert unsupported(spec_with(_generate_spec(), threads=1), cpu, tiny) is None
    reason = unsupported(spec_with(_generate_spec(), compile="default"), cpu, tiny)
    assert reason is not None and reason.endswith("add --kv-cache static")
    static = spec_with(_generate_spec(), kv_cache="static", compile="default")
    assert unsupported(static, cpu, tiny) is None
    request = OptimizeRequest(workload=WorkloadRef(TINY), device="cpu", mode="generate")
    ladder = plan_ladder(request)
    assert ladder.base.mode_args == (("new_tokens", 8), ("prompt_length", 16))  # the model's
    assert ladder.stop.min_sample_s == 0.0  # one generation, one sample
    assert ladder.stop.time_cap == 30.0  # a far slower variant stops short of six samples
    longer = replace(request, max_time=4.0)
    assert plan_ladder(longer).stop.time_cap == 60.0  # or after 15 times --max-time
    assert ladder.not_tried["cuda_graphs"] == "cpu cannot capture graphs"
    assert ladder.not_tried["pruning"]


def test_a_compiled_decode_step_warms_up_two_generations_whoever_plans_it():
    # On the H200 the second generation's prefill still ran 1.9-2.5x the later ones' (batch L2)
    from accelbench.devices import resolve_devices
    from accelbench.engine.measure import StopRule
    from accelbench.engine.runner import run_config
    from accelbench.levers import spec_with, warmup_needed

    cpu, tiny = resolve_devices("cpu")[0], get_workload(TINY)
    compiled = spec_with(_generate_spec(batch_size=1), kv_cache="static", compile="default")
    assert warmup_needed(compiled) == 2 and warmup_needed(_generate_spec()) == 0
    assert warmup_needed(replace(compiled, mode="infer")) == 0  # as asked: not measured there
    assert StopRule(warmup=3).at_least(2).warmup == 3 and StopRule().at_least(2).warmup == 2
    levers = (("kv_cache", ("static",)), ("compile", ("", "default")))
    sweep = Sweep((WorkloadRef(TINY),), ("cpu",), modes=("generate",), levers=levers)
    warmups = {label(c.spec): c.stop.warmup for c in sweep.configs([tiny], [cpu])}
    assert warmups == {
        "generate fp32 b1 p16 n8 static-cache": 1,
        "generate fp32 b1 p16 n8 static-cache compile": 2,
    }
    # and the runner itself, for a plan made elsewhere (optimize, max-batch probes, run_one)
    result = run_config(compiled, tiny, cpu, StopRule(blocks=1, warmup=1, min_sample_s=0.0))
    assert result.status == "ok", result.error
    assert result.measurement is not None and len(result.measurement.warmup) == 2
    assert len(result.metrics["generation"]["prefill_s"]) == 1  # the timed one only


def test_ttft_tpot_and_tokens_per_second_are_one_definition():
    """Issue 27 item 8: a generation with stalls (most steps 2 ms, some 35 ms) must not say
    "2 ms per token" beside a tokens/s that its median decode time gives."""
    from accelbench.analysis.facts import Generation
    from accelbench.render.console.run_notes import generation_notes

    fast, stall = 0.002, 0.035
    steps = [(fast,) * 13 + (stall,) * 2, (fast,) * 14 + (stall,), (fast,) * 12 + (stall,) * 3]
    g = Generation(
        prompt_length=32, new_tokens=16, batch_size=1, generated_tokens=16,
        prefill_s=(0.010, 0.012, 0.011), decode_s=tuple(sum(s) for s in steps),
        token_s=tuple(steps),
    )  # fmt: skip
    tpot = statistics.median(sum(s) for s in steps) / 15  # (13 x 2 + 2 x 35) / 15 ms
    assert g.tpot_median_s == pytest.approx(tpot) and tpot == pytest.approx(0.0064)
    notes = generation_notes(g)
    (ttft,) = [n for n in notes if n.startswith("TTFT")]
    assert "p50 11.000 ms" in ttft and "over 3 generations" in ttft
    (said,) = [n for n in notes if n.startswith("TPOT")]
    assert "p50 6.400 ms" in said and "decode 156 tokens/s = batch 1 / TPOT p50" in said
    assert "p99 undetermined" in said  # three generations carry no 99th percentile
    (itl,) = [n for n in notes if n.startswith("ITL")]
    assert "45 pooled" in itl and "p50 2.000 ms" in itl and "p90 35.000 ms" in itl
