"""Mode serve on a language model through the real command: LoadGen, with its token latencies,
drives the tiny GPT-2 in a worker prompt by prompt; the result keeps LoadGen's TTFT, TPOT,
tokens/s and verdict; bad options are one line, exit 2."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import run_cli

TINY = ("gpt2-tiny", "--devices", "cpu", "--modes", "serve", "--prompt-lengths", "8",
        "--new-tokens", "3", "--max-batches", "4", "--batch-waits", "1", "--rounds", "1",
        "--quiet")  # fmt: skip


def test_offline_serves_prompts_and_keeps_loadgens_tokens_per_second(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    db = str(tmp_path / "s.db")
    out = run_cli("run", *TINY, "--scenarios", "offline", "--db", db, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "serve fp32 offline ttft<=2000 tpot<=100 mb4 w1 p8 n3" in out.stdout
    (result,) = json.loads(run_cli("results", "--db", db, "--json").stdout)
    assert result["status"] == "ok" and result["spec"]["new_tokens"] == 3
    assert "latency_bound_ms" not in result["spec"]  # a classifier's bound: not a model's
    served = result["metrics"]["serve"]
    (offline,) = served["runs"]
    assert offline["scenario"] == "offline" and offline["valid"], offline["summary"]
    assert "Tokens per second" in offline["summary"]
    # LoadGen counts the tokens each answer says it has: 3 a prompt
    assert offline["tokens_per_s"] == pytest.approx(3 * offline["qps"], rel=0.05)
    assert served["offline_tokens_per_s"] == offline["tokens_per_s"]
    assert offline["ttft_p99_ms"] is None  # Offline times no first token
    assert served["ttft_bound_ms"] == 2000.0 and served["tpot_bound_ms"] == 100.0
    assert max(int(size) for size in offline["batches"]) <= 4
    assert served["figure"] == pytest.approx(offline["qps"])
    # infer's FLOPs per sample would not be a generation's: none is claimed
    assert "flops_per_sample" not in result["metrics"], result["metrics"].keys()
    said = r"Offline: [0-9.,]+ prompts/s, [0-9.,]+ tokens/s \(LoadGen VALID\)"
    assert re.search(said, out.stdout), out.stdout


def test_a_tpot_bound_no_load_can_meet_ends_with_one_line_and_keeps_the_runs(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    db = str(tmp_path / "s.db")
    out = run_cli("run", *TINY, "--tpot-bounds", "0.001", "--db", db, timeout=300)
    assert "Traceback" not in out.stderr
    (result,) = json.loads(run_cli("results", "--db", db, "--json").stdout)
    assert result["status"] != "ok"
    assert re.fullmatch(
        r".*even one prompt at a time has a TPOT of [0-9.e+-]+ ms at p99; the bound is 0\.001 ms",
        result["error"],
    ), result["error"]
    served = result["metrics"]["serve"]
    assert [r["scenario"] for r in served["runs"]] == ["singlestream", "offline"]
    single = served["runs"][0]
    # SingleStream times first tokens: LoadGen's percentiles, ordered, the first below the whole
    assert 0 < single["ttft_p50_ms"] <= single["ttft_p90_ms"] <= single["ttft_p99_ms"]
    assert 0 < single["tpot_p50_ms"] <= single["tpot_p99_ms"]
    assert single["ttft_p50_ms"] < single["p50_ms"]
    assert served["server_qps"] is None


MORE_THAN_0 = "must be a number of milliseconds more than 0"


@pytest.mark.parametrize(
    ("workload", "option", "said"),
    [
        ("gpt2-tiny", ["--ttft-bounds", "0"], f"ttft_bound_ms {MORE_THAN_0}"),
        ("gpt2-tiny", ["--ttft-bounds", "-3"], f"ttft_bound_ms {MORE_THAN_0}"),
        ("gpt2-tiny", ["--tpot-bounds", "nan"], f"tpot_bound_ms {MORE_THAN_0}"),
        ("gpt2-tiny", ["--tpot-bounds", "inf"], f"tpot_bound_ms {MORE_THAN_0}"),
        ("gpt2-tiny", ["--latency-bounds", "10"], "--latency-bounds bounds a classifier's"),
        ("gpt2-tiny", ["--scenarios", "multistream"], "scenario multistream cannot serve a"),
        ("gpt2-tiny", ["--new-tokens", "1"], "needs --new-tokens of 2 or more"),
        ("gpt2-tiny", ["--prompt-lengths", "250", "--new-tokens", "20"], "than gpt2-tiny's 256"),
        ("mlp", ["--ttft-bounds", "500"], "--ttft-bounds apply to serving a language model, and"),
    ],
)
def test_bad_language_model_serve_options_are_one_line_and_exit_2(
    tmp_path, workload, option, said
):
    out = run_cli("run", workload, "--devices", "cpu", "--modes", "serve", *option,
                  "--db", str(tmp_path / "s.db"))  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert said in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr


def test_a_served_language_model_s_label_names_its_token_bounds():
    from accelbench.core.result import RunSpec
    from accelbench.levers.registry import label

    args = (("max_batch", "auto"), ("new_tokens", 8), ("prompt_length", 16),
            ("scenario", "server"), ("tpot_bound_ms", 100.0),
            ("ttft_bound_ms", 2000.0))  # fmt: skip
    spec = RunSpec(workload="gpt2-tiny", device="cpu", batch_size=1, steps_per_block=1,
                   mode="serve", mode_args=args)  # fmt: skip
    assert label(spec) == "serve fp32 server ttft<=2000 tpot<=100 mb=auto p16 n8"
