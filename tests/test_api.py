"""The public API is `accelbench.__all__`: every name loads, none pulls in torch by being
imported, and each is documented in the README's Python API section."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import accelbench

README = Path(__file__).resolve().parent.parent / "README.md"


def _api_section() -> str:
    text = README.read_text()
    return text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("name", accelbench.__all__)
def test_every_public_name_loads_and_is_documented(name):
    assert getattr(accelbench, name) is not None
    assert re.search(rf"`{re.escape(name)}`", _api_section()), f"{name} is not in the README"


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        accelbench.nothing  # noqa: B018


def test_importing_accelbench_imports_no_torch():
    code = "import sys, accelbench; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
