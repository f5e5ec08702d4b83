"""The version of tagger: one place, read by the package, the build and the model cards."""

__version__ = "0.1.0"
