"""The `accelbench` command: the parser assembled from one module per command, dispatch, and
exit codes.

Only argparse and torch-free modules load at import time, so `accelbench --help` is instant;
each handler imports what it needs. An AccelbenchError becomes one line on stderr and exit 2.
Ctrl-C (exit 130), SIGTERM (exit 143) and SIGHUP (exit 129, the terminal closed) end the running
worker's process group on the way out and keep what is stored; a reader that closes the pipe
(`| head`) ends the command quietly.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from types import FrameType

from ..core.version import __version__
from ..errors import AccelbenchError, torch_problem
from . import (
    calibrate,
    compare,
    devices,
    explain,
    export,
    optimize,
    report,
    results,
    run,
    verify,
    workloads,
)
from .output import OutputClosed, guarded_stdout
from .parser import Parser

# As a shell reports a command that a signal ended: 128 + SIGPIPE (and 128 + SIGTERM...).
EXIT_CLOSED_PIPE = 141
# The signals that end a run as Ctrl-C does, with what the command says on the way out
ENDING_SIGNALS = {signal.SIGTERM: "terminated", signal.SIGHUP: "hung up (SIGHUP)"}
# In the order `accelbench --help` lists them; each adds its subparser(s) and their handlers.
COMMANDS = (
    run,
    explain,
    devices,
    workloads,
    calibrate,
    compare,
    report,
    export,
    optimize,
    verify,
    results,
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="accelbench",
        description="How fast your PyTorch model trains and infers on every device you have, "
        "measured honestly: synchronized timing, warm-up excluded, raw samples kept, spread "
        "reported.",
    )
    parser.add_argument("--version", action="version", version=f"accelbench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


class Terminated(BaseException):
    """SIGTERM or SIGHUP, raised in the main thread wherever it is, so that the clean-up Ctrl-C
    gets runs too (the worker's process group ended, the database closed). Not an Exception:
    code that turns failures into results must not catch it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def main(argv: Sequence[str] | None = None) -> int:
    try:
        with _sigterm_raises(), guarded_stdout():
            # Building the parser loads the lever registry, plugins included: a broken plugin
            # is the user's error, said in one line.
            args = build_parser().parse_args(argv)
            # Called as the program (not by a test or a script, which pass argv): the process's
            # wall is the command's, and its last line may say so.
            args.whole_process = argv is None
            code = int(args.handler(args))
            sys.stdout.flush()  # a closed pipe shows here, where it is caught, not at exit
            return code
    except OutputClosed as exc:  # measured results were stored before anything was printed
        print(f"accelbench: error: {exc}; results already stored are kept", file=sys.stderr)
        _quiet_stdout()
        return 2
    except AccelbenchError as exc:
        print(f"accelbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("accelbench: interrupted; results already stored are kept", file=sys.stderr)
        return 130
    except Terminated as ended:
        said = ENDING_SIGNALS[signal.Signals(ended.signum)]
        with contextlib.suppress(OSError):  # after a hang-up, stderr may have no reader
            print(f"accelbench: {said}; results already stored are kept", file=sys.stderr)
        return 128 + ended.signum
    except BrokenPipeError:
        # The reader stopped reading (`results --json | head`): there is no one to tell.
        _quiet_stdout()
        return EXIT_CLOSED_PIPE
    except Exception:
        # A torch that shadows the real one, or is broken, fails wherever it is first used
        problem = torch_problem()
        if problem is None:
            raise  # not the environment's: a bug, shown whole
        print(f"accelbench: error: {problem}", file=sys.stderr)
        return 2


def _quiet_stdout() -> None:
    """Python flushes stdout again at exit; pointed at /dev/null, that cannot fail (a closed
    stdout has nothing to flush)."""
    if sys.stdout is not None:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM and SIGHUP raise Terminated for the duration (signals reach the main thread
    only). One ignored when the command starts stays ignored: `nohup` asks that of SIGHUP."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in ENDING_SIGNALS}
    for signum, handler in previous.items():
        if handler != signal.SIG_IGN:
            signal.signal(signum, _terminate)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # None: a handler not set from Python, left as it is
                signal.signal(signum, handler)


def _terminate(signum: int, frame: FrameType | None) -> None:
    for ending in ENDING_SIGNALS:  # a second one must not cut the clean-up short
        signal.signal(ending, signal.SIG_IGN)
    raise Terminated(signum)


if __name__ == "__main__":
    sys.exit(main())
