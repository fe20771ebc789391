"""The built-in modes, one file each, registered with `core.modes` when imported: train,
infer, generate and serve. Each says what it is (its traits) and builds the step PyTorch times; a
plugin's mode is one file like these (docs/extending.md). Nothing here imports torch at the
top, so `accelbench --help` can list the modes."""

from __future__ import annotations

import importlib

from ..core.modes import Mode, all_modes, find_mode, mode_names, mode_of, register_mode

__all__ = ["BUILT_IN", "Mode", "all_modes", "find_mode", "mode_names", "mode_of", "register_mode"]

BUILT_IN = ("train", "infer", "generate", "serve")  # registration order: the order `--help` lists

for _module in BUILT_IN:
    importlib.import_module(f".{_module}", __name__)  # each registers its mode
importlib.import_module(".serve_lm", __name__)  # installs a language model's serving in serve
