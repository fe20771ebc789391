"""`track`: a drop-in for seed 000's `tqdm(range(100))` whose it/s is work done, not queued.

tqdm and friends read the host clock while the GPU may still be working through what the loop
queued, so their it/s on an asynchronous device measures how fast Python enqueues work. `track`
synchronizes the device before every progress update, and keeps each iteration's synchronized
duration so the loop can be summarized honestly afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

import torch
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from ..core.stats import Measurement
from ..devices import Device, Timer, pick_device

__all__ = ["track"]

T = TypeVar("T")


class _RateColumn(ProgressColumn):
    """it/s, as tqdm shows it."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("?" if speed is None else f"{speed:.2f}it/s")


class _TimeLeftColumn(TimeRemainingColumn):
    """Time left, as rich estimates it from the last 30 s of progress; where that window holds
    too few steps to say (a sweep whose configurations take minutes each), from the average
    step since the task began."""

    def render(self, task: Task) -> Text:
        if task.total is None or task.finished or task.time_remaining is not None:
            return super().render(task)
        elapsed = task.elapsed
        if not elapsed or not task.completed or task.remaining is None:
            return super().render(task)
        seconds = math.ceil(elapsed / task.completed * task.remaining)
        minutes, second = divmod(seconds, 60)
        hours, minute = divmod(minutes, 60)
        return Text(f"{hours:d}:{minute:02d}:{second:02d}", style="progress.remaining")


def _as_device(device: Device | torch.device | str | None) -> Device:
    if isinstance(device, Device):
        return device
    return pick_device(None if device is None else str(device))


def progress_bar(console: Console | None = None, disable: bool = False) -> Progress:
    """The progress bar accelbench uses everywhere: on stderr, off when not a terminal; each
    task with a known total shows an estimate of the time it has left."""
    console = console or Console(stderr=True)
    return Progress(
        TextColumn("{task.description}", markup=False),  # names are text, not markup
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        _TimeLeftColumn(),
        _RateColumn(),
        console=console,
        disable=disable or not console.is_terminal,
        transient=False,
    )


class track(Generic[T]):  # noqa: N801  (named like the function it stands in for)
    """Iterate over `iterable` with a progress bar, synchronizing `device` at each step.

    `device` is a Device, a torch.device, a name such as "cuda", or None for pick_device().
    After the loop, `.measurement` holds each iteration's synchronized duration; the first
    iteration counts as warm-up.
    """

    def __init__(
        self,
        iterable: Iterable[T],
        device: Device | torch.device | str | None = None,
        description: str = "",
        total: int | None = None,
        disable: bool = False,
    ) -> None:
        self.iterable = iterable
        self.device = _as_device(device)
        self.description = description or self.device.name
        self.total = total if total is not None else _length(iterable)
        self.disable = disable
        self.durations: list[float] = []

    def __iter__(self) -> Iterator[T]:
        with progress_bar(disable=self.disable) as bar:
            task = bar.add_task(self.description, total=self.total)
            timer: Timer = self.device.timer()
            timer.start()
            for item in self.iterable:
                yield item  # the caller's loop body runs here
                timer.stop()  # synchronizes: the body's device work is done
                self.durations.append(timer.elapsed())
                bar.advance(task)
                timer = self.device.timer()
                timer.start()

    @property
    def measurement(self) -> Measurement:
        if len(self.durations) < 2:
            raise ValueError("track needs at least two iterations to leave one for warm-up")
        return Measurement(samples=tuple(self.durations[1:]), warmup=tuple(self.durations[:1]))


def _length(iterable: Iterable[object]) -> int | None:
    try:
        return len(iterable)  # type: ignore[arg-type]
    except TypeError:
        return None
