"""torch.onnx wraps the real failure in an error whose first line only announces the next steps;
what export reports is the failure that started it (issue 37 item 7)."""

from accelbench.exporters.onnx import _cause


def test_the_root_cause_is_reported_not_the_wrapper():
    try:
        try:
            raise TypeError("forward() missing 1 required positional argument: 'meta'")
        except TypeError as inner:
            raise RuntimeError(
                "Failed to export the model with torch.export. This is step 1/3 of exporting "
                "the model to ONNX. Next steps:\n- Modify the model code"
            ) from inner
    except RuntimeError as wrapped:
        said = _cause(wrapped)
    assert said == "TypeError: forward() missing 1 required positional argument: 'meta'"


def test_an_error_of_its_own_is_reported_as_it_is():
    assert _cause(ValueError("\x1b[31mbad\x1b[0m\nmore")) == "ValueError: bad"
