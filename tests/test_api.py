"""The public API is `accelbench.__all__`: every name loads, none pulls in torch by being
imported, and each is documented in docs/api.md."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import accelbench

API_DOC = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def _api_section() -> str:
    return API_DOC.read_text()


@pytest.mark.parametrize("name", accelbench.__all__)
def test_every_public_name_loads_and_is_documented(name):
    assert getattr(accelbench, name) is not None
    assert re.search(rf"`{re.escape(name)}`", _api_section()), f"{name} is not in docs/api.md"


def test_all_lists_exactly_the_names_that_load_lazily():
    # __all__ is a literal list for type checkers; it must not drift from the lazy table
    assert set(accelbench.__all__) == {"__version__", *accelbench._EXPORTS}


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        accelbench.nothing  # noqa: B018


def test_importing_accelbench_imports_no_torch():
    code = "import sys, accelbench; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_optimize_is_a_function_returning_what_the_command_renders(tmp_path):
    """Issue 28 item 4: the library does what `accelbench optimize` does, from a typed
    request; the value returned is the one the console and --json render."""
    db = tmp_path / "o.db"
    request = accelbench.OptimizeRequest(
        workload=accelbench.WorkloadRef("mlp"), device="cpu", mode="infer",
        levers=("threads",), epochs=2, budget=120,
    )  # fmt: skip
    searched = accelbench.optimize(request, db=db)
    names = [v.rung.name for v in searched.verdicts]
    assert names[0] == "fp32 eager" and len(names) > 1
    assert searched.path()[0].strip() == "1. fp32 eager (baseline)"
    assert accelbench.recommend(searched.verdicts).rung.name in names
    with accelbench.Store(db) as store:
        assert len({r.spec for r in store.results()}) == len(names)  # each variant stored


def test_a_bad_request_is_a_usage_error_before_anything_runs():
    request = accelbench.OptimizeRequest(
        workload=accelbench.WorkloadRef("mlp"), device="cpu", mode="x"
    )
    with pytest.raises(accelbench.UsageError):
        accelbench.optimize(request)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"batch_size": 0}, "batch_size must be a whole number from 1 to 1,000,000,000, not 0"),
        ({"warmup": -1}, "warmup must be a whole number from 0 to 1,000,000,000, not -1"),
        ({"budget": 0}, "--budget must be a number of seconds above 0 and at most 604,800"),
        ({"workload": 3}, "workload takes a workload name"),
    ],
)
def test_an_optimize_request_checks_itself_as_it_is_made(fields, said):
    with pytest.raises(accelbench.UsageError, match=said):
        accelbench.OptimizeRequest(**{"workload": accelbench.WorkloadRef("mlp"), **fields})


def test_requests_of_more_than_four_fields_are_made_by_keyword():
    for kind in (
        accelbench.BenchmarkRequest, accelbench.OptimizeRequest, accelbench.ExportRequest,
        accelbench.CalibrateRequest, accelbench.VerifySettings, accelbench.Filters,
    ):  # fmt: skip
        with pytest.raises(TypeError, match="positional"):
            kind(accelbench.WorkloadRef("mlp"))
