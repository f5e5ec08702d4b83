"""The version of tagger: one place, read by the package, the build and the model cards."""

__version__ = "0.1.0"

# The name to install it by: "tagger" on the public index is another project. (The import name
# and the command stay tagger.) Every hint that says what to install names it from here.
DISTRIBUTION = "abstract-tagger"


def install_hint(extra: str | None = None) -> str:
    """What to run for an optional part: ``pip install`` of the libraries the extra names, as
    the installed package's metadata lists them (pyproject.toml's extras: one list), a command
    that works wherever tagger is installed; from a source folder, ``pip install '.[extra]'``.
    With no extra: how to install a newer tagger."""
    if extra is None:
        return "pip install -U . in the source folder of a newer tagger"
    from importlib.metadata import PackageNotFoundError, requires

    try:
        listed = requires(DISTRIBUTION) or []
    except PackageNotFoundError:
        return f"pip install '.[{extra}]' in tagger's source folder"
    wanted = [r.split(";")[0].strip() for r in listed if f"extra == '{extra}'" in r.replace('"', "'")]
    return (
        "pip install " + " ".join(f"'{name}'" for name in wanted) if wanted else f"pip install '.[{extra}]'"
    )
