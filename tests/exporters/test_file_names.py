"""What an exported file is named after: two models' factories of one name must not collide."""

import pytest

from accelbench.exporters.common import file_stem


@pytest.mark.parametrize(
    ("name", "stem"),
    [
        ("seed-cnn", "seed-cnn"),
        ("/a/b/vit.py:make_vit", "vit.make_vit"),
        ("nets.vit:make", "nets.vit.make"),
        ("/a/nets.py:make(depth=18, name='x:y')", "nets.make(depth=18,_name=_x_y_)"),
    ],
)
def test_export_files_are_named_after_the_file_and_factory(name, stem):
    assert file_stem(name) == stem
