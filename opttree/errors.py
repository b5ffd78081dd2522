"""User-facing errors: every bad input ends in one of these, with a message a person can act on."""


class OptTreeError(Exception):
    """Base class: the CLI prints the message and exits non-zero; the app shows it."""


class BadInput(OptTreeError, ValueError):
    """A prompt, setting or trace that cannot be used as given."""


class ModelLoadError(OptTreeError):
    """A model id/path that cannot be loaded (unknown id, offline hub, missing files)."""
