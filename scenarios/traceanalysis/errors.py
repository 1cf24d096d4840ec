"""The one error analysis and ingestion raise for bad input; its text is shown to the user."""


class TraceError(ValueError):
    """A trace or upload we cannot read; the message says why in the user's terms."""
