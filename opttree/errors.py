"""User-facing errors: every bad input ends in one of these, with a message a person can act on; `guarded`
turns them into one `error:` line for the command line and every `python -m` entry point."""

import argparse
import sys
import traceback


class OptTreeError(Exception):
    """Base class: the CLI prints the message and exits non-zero; the app shows it."""


class BadInput(OptTreeError, ValueError):
    """A prompt, setting or trace that cannot be used as given."""


class ModelLoadError(OptTreeError):
    """A model id/path that cannot be loaded (unknown id, offline hub, missing files)."""


def one_line(text: str, limit: int = 500) -> str:
    """A message on one line (the CLI's promise: one `error:` line), shortened to `limit` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def guarded(command, verbose: bool = True) -> int:
    """Run `command()` and return its exit status (an int it returns, else 0); every failure becomes one
    `error:` line on stderr and a non-zero status.

    Bad input (the project's own errors) exits with 2; anything unexpected with 1, its traceback
    printed only with `verbose` (`opttree --verbose`; the `python -m` tools always print it)."""
    try:
        status = command()
        return status if isinstance(status, int) and not isinstance(status, bool) else 0
    except OptTreeError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 (the CLI's last line of defence: one line, not a traceback)
        if verbose:
            traceback.print_exc(file=sys.stderr)
        hint = "" if verbose else " (run again with --verbose for the traceback)"
        print(f"error: unexpected {type(exc).__name__}: {one_line(exc) or 'no message'}{hint}", file=sys.stderr)
        return 1


class OneLineParser(argparse.ArgumentParser):
    """The command line's argument parser: a flag it refuses (unknown, a bad choice or number) is one `error:`
    line and status 2 like every other bad input, not a usage block; `--help` still prints the usage. Its
    subcommands' parsers are of the same class (argparse's `add_subparsers` default)."""

    def error(self, message):
        self.exit(2, f"error: {one_line(message)} ({self.prog} --help lists the flags)\n")
