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


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        accelbench.nothing  # noqa: B018


def test_importing_accelbench_imports_no_torch():
    code = "import sys, accelbench; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
