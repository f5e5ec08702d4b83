"""The version of tagger: one place, read by the package, the build and the model cards."""

__version__ = "0.1.0"

# The name to install it by: "tagger" on the public index is another project. (The import name
# and the command stay tagger.) Every hint that says what to install names it from here.
DISTRIBUTION = "abstract-tagger"


def install_hint(extra: str | None = None) -> str:
    """``pip install 'abstract-tagger[extra]'``: what to run for an optional part."""
    return f"pip install '{DISTRIBUTION}[{extra}]'" if extra else f"pip install -U {DISTRIBUTION}"
