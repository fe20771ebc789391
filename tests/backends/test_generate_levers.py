"""Mode generate's levers (issue 13, item 4): the static KV cache, torch.compile of the decode
step, the attention implementation, token-agreement drift, and the search on generate."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

from accelbench.analysis.bandwidth import generation_figures, kv_cache_bytes
from accelbench.analysis.drift import compare_generations
from accelbench.analysis.facts import Drift, Generation
from accelbench.analysis.verdict import decode_bound, decode_verdict
from accelbench.backends import unsupported
from accelbench.backends.generate import GenerationLog, generate_once, generation_drift
from accelbench.backends.pytorch import build_torch
from accelbench.core.peaks import PeakFigures
from accelbench.core.result import RunSpec
from accelbench.core.stats import Measurement
from accelbench.devices import resolve_devices
from accelbench.levers import find_lever, label, spec_with
from accelbench.workflows.optimize import Tolerance
from accelbench.workloads import get_workload
from accelbench.workloads.llm import KVLayout, static_cache
from tests.conftest import run_cli

TINY = "gpt2-tiny"


@pytest.fixture(scope="module")
def cpu():
    return resolve_devices("cpu")[0]


@pytest.fixture(scope="module")
def tiny():
    return get_workload(TINY)


def _model(tiny):
    torch.manual_seed(0)
    return tiny.build_model().eval()


def _prompt(tiny, batch=2, length=12):
    return tiny.prompt(torch.Generator().manual_seed(0), batch, length)


def _spec(**levers) -> RunSpec:
    spec = RunSpec(TINY, "cpu", 2, 1, mode="generate").with_mode_args(
        prompt_length=12, new_tokens=6
    )
    return spec_with(spec, **levers)


def test_a_static_cache_generates_what_the_dynamic_one_does_and_resets(tiny):
    model, prompt = _model(tiny), _prompt(tiny)
    with torch.inference_mode():
        dynamic = generate_once(model, prompt, 6, lambda: None)
        logits = generate_once(model, prompt, 6, lambda: None, forced=dynamic.tokens)
        cache = static_cache(model, 2, 12 + 6)
        first = generate_once(model, prompt, 6, lambda: None, cache=cache, forced=dynamic.tokens)
        second = generate_once(model, prompt, 6, lambda: None, cache=cache)  # reset, reused
    assert torch.equal(first.tokens, dynamic.tokens)
    assert torch.equal(second.tokens, dynamic.tokens)
    assert first.first_logits is not None and logits.first_logits is not None
    assert torch.allclose(first.first_logits, logits.first_logits, atol=1e-5)


def test_a_decode_forward_given_runs_the_decode_steps_only(tiny):
    model, calls = _model(tiny), []

    def decode(**kwargs):
        calls.append(tuple(kwargs["input_ids"].shape))
        return model(**kwargs)

    with torch.inference_mode():
        generate_once(model, _prompt(tiny), 5, lambda: None, decode=decode)
    assert calls == [(2, 1)] * 4  # four decode steps of one token; the prefill ran the model


def test_a_static_cache_is_read_whole_at_every_step():
    layout = KVLayout(2, 2, 8)
    log = GenerationLog(16, 4, 2, 1000, layout, 4, static_length=20)
    from accelbench.backends.generate import Phases

    log.add(Phases(0.1, (0.01, 0.01, 0.01), torch.zeros(2, 4), torch.zeros(2, 9)))
    found = log.summary(Measurement(samples=(1.0,), warmup=(), repeat=1))
    # 2 (K and V) x 2 layers x 2 KV heads x 8 dims x 4 bytes x 20 positions x 2 sequences
    assert found["kv_bytes_per_token"] == 2 * 2 * 2 * 8 * 4 * 20 * 2
    assert found["kv_bytes_per_token"] == kv_cache_bytes(layout, 20, 2, 4)
    assert found["static_cache"] is True and found["kv_read_positions"] == 20
    assert found["token_s"] == [[0.01, 0.01, 0.01]]  # the raw steps are kept


def test_the_levers_say_where_they_do_not_apply(cpu, tiny):
    infer = replace(_spec(), mode="infer", mode_args=())
    assert unsupported(spec_with(infer, kv_cache="static"), cpu, tiny) == (
        "kv_cache: a KV cache is kept only in mode generate"
    )
    mlp = get_workload("mlp")
    mlp_spec = RunSpec("mlp", "cpu", 8, 1)
    assert unsupported(spec_with(mlp_spec, attention="eager"), cpu, mlp) == (
        "attention: mlp is not a transformers language model"
    )
    assert unsupported(spec_with(infer, attention="eager"), cpu, tiny) is None  # any mode
    assert label(_spec(kv_cache="static", compile="default", attention="eager")) == (
        "generate fp32 b2 p12 n6 attn=eager static-cache compile"
    )


def test_the_attention_lever_switches_the_implementation(cpu, tiny):
    eager = build_torch(_spec(attention="eager"), tiny, cpu)
    plain = build_torch(_spec(), tiny, cpu)
    assert eager.model.config._attn_implementation == "eager"
    assert plain.model.config._attn_implementation == tiny.attention == "sdpa"
    with torch.inference_mode():
        b = generate_once(plain.model, plain.batch[0], 6, lambda: None)
        a = generate_once(eager.model, eager.batch[0], 6, lambda: None, forced=b.tokens)
        b = generate_once(plain.model, plain.batch[0], 6, lambda: None, forced=b.tokens)
    assert torch.equal(a.tokens, b.tokens)
    assert a.first_logits is not None and b.first_logits is not None
    assert torch.allclose(a.first_logits, b.first_logits, atol=1e-5)


def test_the_search_variants_of_generate(tiny):
    base = _spec()
    graphs = SimpleNamespace(can_capture_graphs=True, kind="cuda")
    no_graphs = SimpleNamespace(can_capture_graphs=False, kind="cpu")
    kv, compile_, attention = (find_lever(n) for n in ("kv_cache", "compile", "attention"))
    (on_gpu,) = kv.variants(base, graphs, tiny)
    assert on_gpu.name == "static-cache + compile:reduce-overhead"
    assert on_gpu.spec == _spec(kv_cache="static", compile="reduce-overhead")
    (on_cpu,) = kv.variants(base, no_graphs, tiny)
    assert on_cpu.spec == _spec(kv_cache="static", compile="default")
    assert compile_.variants(base, graphs, tiny) == []  # compile alone cannot generate
    # the stack's own mode is not its own alternative
    modes = [v.spec for v in compile_.alternatives(on_gpu.spec, graphs, tiny)]
    assert on_gpu.spec not in modes and modes
    assert [v.name for v in attention.variants(base, no_graphs, tiny)] == ["attn=eager"]


def test_token_agreement_by_hand():
    reference = {
        "tokens": torch.tensor([[1, 2, 3, 4], [1, 2, 3, 4]]),
        "logits": torch.tensor([[0.0, 1.0, 3.0], [2.0, 0.0, 1.0]]),
    }
    # fed fp32's tokens, one prediction of eight differs; free-running, the first sequence
    # went another way after its second token
    predicted = torch.tensor([[1, 2, 9, 4], [1, 2, 3, 4]])
    free = torch.tensor([[1, 2, 9, 8], [1, 2, 3, 4]])
    logits = torch.tensor([[0.0, 1.0, 2.97], [2.0, 0.0, 1.0]])
    found = compare_generations(reference, predicted, logits, free)
    assert found["top1_agreement"] == 7 / 8 and found["samples"] == 8
    assert found["agreeing_prefix"] == 3.0  # the median of 2 and 4 leading tokens
    assert found["first_token_agreement"] == 1.0
    assert found["max_rel_error"] == pytest.approx(0.03 / 3.0)
    drift = Drift.from_record(found)
    assert drift.token_ids and drift.top1_agreement == 7 / 8
    assert Tolerance(min_top1=0.9).breach(drift) == "generated-token agreement 87.5% is below 90%"
    assert "agreeing_prefix" not in compare_generations(reference, predicted, logits)


def test_teacher_forcing_feeds_the_reference_tokens(tiny):
    model, prompt = _model(tiny), _prompt(tiny)
    forced = torch.randint(0, tiny.vocab_size, (2, 6), generator=torch.Generator().manual_seed(1))
    fed = []

    def decode(**kwargs):
        fed.append(kwargs["input_ids"].clone())
        return model(**kwargs)

    with torch.inference_mode():
        found = generate_once(model, prompt, 6, lambda: None, decode=decode, forced=forced)
        free = generate_once(model, prompt, 6, lambda: None)
    assert torch.equal(torch.cat(fed, dim=1), forced[:, :5])  # step i is fed forced's token i
    assert torch.equal(found.tokens[:, 0], free.tokens[:, 0])  # the prefill's is its own
    assert found.first_logits is not None and free.first_logits is None


def test_fp32_eager_generation_drifts_not_at_all(cpu, tiny):
    found = generation_drift(build_torch(_spec(), tiny, cpu))
    assert found["top1_agreement"] == 1.0 and found["max_rel_error"] == 0.0
    assert found["agreeing_prefix"] == 6.0 and found["samples"] == 2 * 6
    # every step's logits compared (issue 27): none off, every position decisive
    assert found["spread_error"] == 0.0 and found["compared_positions"] == 2 * 6
    assert found["decisive_positions"] == 2 * 6 and found["decisive_agreement"] == 1.0
    low = generation_drift(build_torch(replace(_spec(), precision="bf16"), tiny, cpu))
    assert 0.0 < low["max_rel_error"] < 0.1  # bf16 weights: not the fp32 computation
    assert 0.0 < low["spread_error"] < 0.1
    assert Tolerance().breach(Drift.from_record(low)) is None


def test_a_compiled_decode_on_a_static_cache_drifts_not_at_all(cpu, tiny):
    prep = build_torch(_spec(kv_cache="static", compile="default"), tiny, cpu)
    assert prep.decode is not None and prep.kv_cache is not None
    found = generation_drift(prep)
    assert found["top1_agreement"] == 1.0 and found["agreeing_prefix"] == 6.0
    # the prefill runs eagerly, so the first logits are those of the static cache's prefill,
    # which attends over its masked spare positions too: fp32's within rounding
    assert found["max_rel_error"] < 1e-5


def test_a_real_static_cache_says_its_length(tiny):
    from accelbench.backends.generate import _static_length

    assert _static_length(static_cache(_model(tiny), 2, 18)) == 18
    assert _static_length(None) is None
    with pytest.raises(RuntimeError, match="does not say how many positions"):
        _static_length(object())


def test_the_reset_comes_before_the_first_clock(tiny):
    events: list[str] = []

    class Cache:
        def __init__(self, real):
            self.real = real

        def reset(self):
            events.append("reset")
            self.real.reset()

        def __getattr__(self, name):
            return getattr(self.real, name)

    model = _model(tiny)
    cache = static_cache(model, 2, 18)
    with torch.inference_mode():
        generate_once(model, _prompt(tiny), 1, lambda: None, cache=cache)  # allocates it
        generate_once(
            model, _prompt(tiny), 2, lambda: events.append("sync"),
            lambda: events.append("clock") or 0.0, cache=Cache(cache),
        )  # fmt: skip
    assert events[:3] == ["reset", "sync", "clock"]


def test_optimize_searches_generate_with_token_drift(tmp_path):
    db = str(tmp_path / "o.db")
    done = run_cli(
        "optimize", TINY, "--mode", "generate", "--device", "cpu", "--levers",
        "precision,attention,kv_cache,compile", "--blocks", "3", "--db", db, "--budget", "600",
        "--prompt-length", "8", "--new-tokens", "4", timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "gpt2-tiny generate b1 p8 n4 on cpu" in out
    assert "tokens/s" in out and "logit error / spread" in out and "decisive tokens agree" in out
    assert "static-cache + compile" in out and "attn=eager" in out
    assert "generation against fp32 eager's on the CPU" in out and "fed fp32's tokens" in out
    # 4 new tokens at batch 1: too few positions to judge the tokens, said per variant
    assert "of 4 positions decisive, 10 needed; judged on its logits alone" in out
    assert "yes (logits)" in out
    listed = run_cli("results", "--db", db, "--json")
    assert listed.returncode == 0 and '"token_ids": true' in listed.stdout
    assert '"spread_error": ' in listed.stdout and '"decisive_positions": ' in listed.stdout
    assert '"graph_breaks": ' in listed.stdout  # the compiled variant says what compile did


@pytest.mark.parametrize(
    "args, message",
    [
        (["mlp", "--mode", "generate"], "mode generate needs a causal language model"),
        ([TINY, "--prompt-length", "8"], "--prompt-length applies to --mode generate or serve"),
        ([TINY, "--mode", "generate", "--prompt-length", "300"], "more than gpt2-tiny's 256"),
        ([TINY, "--mode", "generate", "--new-tokens", "0"], "new_tokens must be a whole number"),
    ],
)
def test_optimize_refuses_bad_generate_input_in_one_line(tmp_path, args, message):
    db = tmp_path / "o.db"
    done = run_cli("optimize", *args, "--device", "cpu", "--db", str(db))
    assert done.returncode == 2 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not db.exists()


def test_gpt2_generates_exactly_n_tokens_on_this_cpu(tmp_path):
    """The real GPT-2 small (124 M, random weights) through the CLI: the issue asks for it in the
    suite; its wall time (about 25 s here) is in BENCHMARKS.md, not asserted."""
    db = str(tmp_path / "g.db")
    done = run_cli(
        "run", "gpt2", "--modes", "generate", "--devices", "cpu", "--prompt-lengths", "32",
        "--new-tokens", "8", "--blocks", "2", "--db", db, "--quiet", timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = run_cli("results", "--db", db, "--json")
    (result,) = json.loads(listed.stdout)
    generation = result["metrics"]["generation"]
    assert generation["generated_tokens"] == 8 and len(generation["token_s"]) == 2
    assert all(len(steps) == 7 for steps in generation["token_s"])


def _generation(p50: float, weights: int = 4_800_000_000) -> Generation:
    return Generation(
        prompt_length=512, new_tokens=3, batch_size=2, generated_tokens=3,
        prefill_s=(0.01,), decode_s=(2 * p50,), token_p50_s=p50, token_p90_s=p50,
        weight_bytes=weights, kv_bytes_per_token=0.0,
    )  # fmt: skip


def test_the_decode_floors_and_what_bounds_the_step_by_hand():
    peaks = PeakFigures({"bf16": 1e15}, 4.8e12, "datasheet")
    # 4.8 GB at 4.8 TB/s: a 1 ms floor; a one-token forward of 1 GFLOP, 2 for the batch of 2,
    # at 1 PFLOP/s: 2 µs
    host = _generation(p50=0.010)
    found = generation_figures(host, "bf16", peaks, 512e9, 1e9)
    assert found["decode_memory_floor_s"] == pytest.approx(1e-3)
    assert found["decode_compute_floor_s"] == pytest.approx(2e-6)
    assert found["decode_floor_share"] == pytest.approx(0.1)
    verdict = decode_verdict(replace(host, **found))
    assert verdict.startswith("decode is bound by neither memory nor compute: the memory")
    assert "10% of the median TPOT" in verdict
    assert verdict.endswith("(reduce-overhead: CUDA graphs) cuts the host's launches")
    assert decode_bound(replace(host, **found)) == "host"
    compiled = replace(host, **found, graph_breaks=0, cudagraph_skips=0)
    assert "torch.compile" not in decode_verdict(compiled)  # already compiled: no advice
    assert decode_bound(compiled) == "kernels"
    memory = _generation(p50=0.0015)
    found = generation_figures(memory, "bf16", peaks, 512e9, 1e9)
    assert decode_verdict(replace(memory, **found)).startswith(
        "decode is bound by memory bandwidth: the memory bandwidth floor is 67%"
    )
    assert decode_bound(replace(memory, **found)) == "memory bandwidth"
    # 2 µs of compute in a 3 µs step: a model too small for its bytes to matter
    small = _generation(p50=3e-6, weights=4_800)
    small = replace(small, **generation_figures(small, "bf16", peaks, 512e9, 1e9))
    assert decode_bound(small) == "compute"
    between = _generation(p50=0.0025)
    found = generation_figures(between, "bf16", peaks, 512e9, 1e9)
    assert decode_verdict(replace(between, **found)).startswith("decode bound undetermined")
    assert decode_bound(replace(between, **found)) == ""
    assert decode_bound(replace(between, decode_floor_share=float("nan"))) == ""
    no_peaks = generation_figures(host, "bf16", None, 512e9, 1e9)
    assert "decode_floor_share" not in no_peaks
    assert decode_verdict(host) == "" and decode_bound(host) == ""
