"""The ``tagger`` command's arguments: every command, option and help text, and the one-line
usage errors with "did you mean" (argparse, exit status 1). What each command does is in
:mod:`tagger.cli`."""

from __future__ import annotations

import argparse
from typing import NoReturn

from . import __version__, output, reading
from .errors import UsageError
from .shipped import DEFAULT_MODEL_DIR
from .workers import default_jobs as batch_jobs


class _Once(argparse._StoreAction):
    """An option of one value (argparse's store, which keeps the last of two in silence):
    given twice, a usage error."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        given: set[str] = getattr(namespace, "_given", set())
        if option_string is not None and self.dest in given:
            first = str(getattr(namespace, self.dest))
            raise UsageError(
                f"{option_string} is given twice ({first!r}, then {str(values)!r})",
                fix=f"Give {option_string} once: it takes one value.",
            )
        namespace._given = given | {self.dest}
        super().__call__(parser, namespace, values, option_string)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, _Once)
        self.register("action", "store", _Once)

    def error(self, message: str) -> NoReturn:  # usage errors exit 1, not argparse's 2
        raise UsageError(message, fix=f"{_did_you_mean(self, message)}See '{self.prog} --help'.")


def _did_you_mean(parser: argparse.ArgumentParser, message: str) -> str:
    """'Did you mean ...? ' for a mistyped verb or option, from argparse's message."""
    import difflib
    import re

    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if choice:
        wrong, known = choice[1], re.findall(r"'([^']*)'", choice[2])
    else:
        unknown = re.search(r"unrecognized arguments: (.*)", message)
        wrong = next((word for word in (unknown[1].split() if unknown else []) if word.startswith("-")), "")
        known = sorted(_option_strings(parser))
        owners = [name for name, command in _commands(parser).items() if wrong in _option_strings(command)]
        if wrong and owners:  # an option, but of another command: not a typo
            return f"{wrong} is an option of {' and '.join(owners)} only. "
    close = difflib.get_close_matches(wrong, known, n=1, cutoff=0.7) if wrong else []
    return f"Did you mean {close[0]}? " if close else ""


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sub-commands of ``parser``, by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option of ``parser`` and of its sub-commands."""
    options: set[str] = set()
    for action in parser._actions:
        options.update(o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                options |= _option_strings(command)
    return options


def parser() -> argparse.ArgumentParser:
    """The parser of the ``tagger`` command; ``command`` names the sub-command given."""
    parser = _Parser(
        prog="tagger", description="Tag research abstracts with a research area and a confidence."
    )
    parser.add_argument("--version", action="version", version=f"tagger {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def text_columns(command: argparse.ArgumentParser, when: str = "") -> None:
        """--column and --title-column: where the abstracts and their titles are."""
        command.add_argument(
            "--column",
            metavar="NAME",
            default="abstract",
            help=f"{when}column or field of the abstracts (default %(default)s)",
        )
        command.add_argument(
            "--title-column",
            metavar="NAME",
            help=f"{when}of the titles (default: title, where there is one)",
        )
        command.add_argument(
            "--sheet",
            metavar="NAME",
            help=f"{when}the sheet of .xlsx workbooks to read (default: the first)",
        )

    def label_column(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--label-column", metavar="NAME", default="area", help="with --data: of the areas (default area)"
        )

    def inputs(
        command: argparse.ArgumentParser, what: str, piped: bool = False, optional: bool = False
    ) -> None:
        command.add_argument(
            "paths",
            nargs="*" if piped or optional else "+",
            metavar="PATH",
            help=f"{what}: files ({reading.FORMAT_LIST}), folders, or -"
            + (" (default: - when text is piped in)" if piped else ""),
        )
        command.add_argument(
            "--input-format", choices=reading.FORMATS, help="read every input as this format"
        )
        command.add_argument(
            "--encoding", default="utf-8", help="text encoding of the inputs (default utf-8)"
        )
        command.add_argument(
            "--skip-bad",
            action="store_true",
            help="leave out bad records, list them, and go on (exit status 3)",
        )
        text_columns(command)
        command.add_argument(
            "--id-column", metavar="NAME", help="of the ids (default: id, where there is one)"
        )

    def model(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--model",
            metavar="DIR",
            help=f"model folder (default: ./{DEFAULT_MODEL_DIR} if it holds one, else the shipped model)",
        )

    def labels(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--labels", metavar="DIR", default="labels", help="taxonomy and hand labels (default labels)"
        )

    def labelled(command: argparse.ArgumentParser) -> None:
        """Where the labels are (suggest and label): labels/ with the texts in --abstracts,
        or the user's own labelled file."""
        labels(command)
        command.add_argument(
            "--abstracts",
            metavar="DIR",
            default="seeds",
            help="where labelled abstracts are kept (default seeds)",
        )
        command.add_argument(
            "--data",
            metavar="FILE",
            help="your own labelled .csv/.jsonl (the one 'train --data' read): answers go there, "
            "its abstracts count as labelled (its columns: --column, --title-column, --label-column)",
        )
        label_column(command)

    def training_data(command: argparse.ArgumentParser) -> None:
        command.add_argument("--data", metavar="FILE", help="labelled .csv/.jsonl with 'abstract' and 'area'")
        text_columns(command, "with --data: ")
        label_column(command)
        labels(command)
        command.add_argument(
            "--abstracts",
            metavar="PATH",
            nargs="+",
            default=["seeds"],
            help="abstracts the labels name (default seeds)",
        )

    def recipe(command: argparse.ArgumentParser, replaced: str) -> None:
        """What train runs and evaluate measures, beyond the labels: a pile, the settings."""
        command.add_argument(
            "--unlabelled",
            metavar="PATH",
            nargs="+",
            help="abstracts without labels (the pile you will tag) to learn from too, by self-training",
        )
        command.add_argument(
            "--search",
            action="store_true",
            help=f"choose the settings anew (by default a retrain keeps the settings {replaced} "
            "chose, while the labels changed by at most 20%%)",
        )

    predict = commands.add_parser("predict", help="tag every abstract in files, folders or stdin (-)")
    inputs(predict, "abstracts to tag", piped=True)
    model(predict)
    predict.add_argument(
        "--format", choices=output.FORMATS, help="output format (default: --output's extension, else csv)"
    )
    predict.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout (atomically)")
    predict.add_argument(
        "--top-k",
        metavar="K",
        type=_checked("--top-k"),
        help="tags: the K most likely areas (with --min-confidence, those at least that likely); "
        "default: the area, and the runner-up when at least 0.15 likely",
    )
    predict.add_argument(
        "--min-confidence",
        metavar="P",
        type=_checked("--min-confidence"),
        help="tags: every area at least this likely (with --top-k, at most K of them)",
    )
    predict.add_argument(
        "--all-probabilities",
        action="store_true",
        help="every area's probability, a column each (probability_AREA), after tags",
    )
    predict.add_argument(
        "--keep",
        metavar="COLUMNS",
        action="append",
        help="input columns to carry into the output, comma-separated (title,doi), or all; repeatable",
    )
    predict.add_argument(
        "--review-below",
        metavar="X",
        type=_checked("--review-below"),
        help="flag confidence below X (0 to 1) for review",
    )
    predict.add_argument(
        "--jobs",
        type=_checked("--jobs"),
        metavar="N",
        help=f"processes to tag with (default and -1: all {batch_jobs()} cores)",
    )
    predict.add_argument(
        "--text", action="store_true", help="each argument is an abstract's text, not a path (as for explain)"
    )
    predict.add_argument("--quiet", action="store_true", help="no progress bar")

    explain = commands.add_parser("explain", help="show the terms that decided each abstract's area")
    explain.add_argument(
        "paths", nargs="+", metavar="PATH", help="files or folders of abstracts (with --text: texts)"
    )
    explain.add_argument(
        "--text", action="store_true", help="each argument is an abstract's text, not a path"
    )
    explain.add_argument(
        "--format",
        choices=("text", "jsonl"),
        default="text",
        help="text lines, or one JSON object an abstract",
    )
    explain.add_argument(
        "--terms",
        type=_checked("--terms"),
        default=10,
        metavar="N",
        help="terms to show (default 10)",
    )
    model(explain)

    suggest = commands.add_parser(
        "suggest", help="the unlabelled abstracts whose labels would teach the model most"
    )
    inputs(suggest, "abstracts to choose from")
    suggest.add_argument("--n", type=_checked("--n"), default=10, help="how many (default 10)")
    suggest.add_argument(
        "--format", choices=("text", "jsonl"), default="text", help="text lines, or one JSON object a line"
    )
    model(suggest)
    labelled(suggest)

    label = commands.add_parser("label", help="label abstracts by hand, most useful first")
    inputs(label, "abstracts to label (with --review: default the project's)", optional=True)
    label.add_argument("--n", type=_checked("--n"), default=20, help="how many to show (default 20)")
    model(label)
    labelled(label)
    walk = label.add_mutually_exclusive_group()  # two ways through the labels
    walk.add_argument(
        "--relabel",
        action="store_true",
        help="review labelled abstracts instead, those whose labels the model doubts most first",
    )
    walk.add_argument(
        "--review",
        action="store_true",
        help="settle disagreements: each abstract annotators labelled differently, with their answers; "
        "yours is its final label",
    )
    label.add_argument(
        "--web",
        action="store_true",
        help="label in a web page served on this machine only (127.0.0.1), with a retrain button",
    )
    label.add_argument(
        "--host",
        metavar="ADDRESS",
        help="with --web: serve the page on this address of this machine (10.0.0.5, a host name) for "
        "annotators on other machines, each with their own link (default 127.0.0.1: this machine only)",
    )
    label.add_argument(
        "--port",
        type=_checked("--port"),
        help="with --web: the port (default: a free one)",
    )
    label.add_argument(
        "--annotator",
        metavar="NAME",
        type=_name,
        help="who is answering, kept with each label in labels.csv (default: your login name)",
    )
    label.add_argument(
        "--annotators",
        metavar="NAMES",
        type=_names,
        help="with --web: one page server for several people (names separated by commas), "
        "each with their own link, answers, undo and progress",
    )
    label.add_argument(
        "--overlap",
        nargs="?",
        const=1.0,
        default=None,
        metavar="SHARE",
        type=_share,
        help="show abstracts others labelled already too (to measure agreement): your answers go "
        "beside theirs; without it, each abstract goes to one annotator. With --web --annotators, "
        "a SHARE (0.2) deals the queue out and shows that share of each one's abstracts to a second "
        "annotator too",
    )

    labels_command = commands.add_parser(
        "labels",
        help="the project's hand labels with their texts (JSON lines, CSV, Parquet), or their agreement",
    )
    labels(labels_command)
    labels_command.add_argument(
        "--abstracts",
        metavar="DIR",
        default="seeds",
        help="where labelled abstracts are kept (default seeds)",
    )
    labels_command.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="where (default: stdout): .jsonl, .csv or .parquet (.gz but Parquet)",
    )
    labels_command.add_argument(
        "--format",
        choices=(*output.FORMATS, "prodigy", "label-studio"),
        help="output format (default: --output's extension, else jsonl); prodigy: JSON lines that "
        "'prodigy db-in' reads, label-studio: JSON tasks that Label Studio imports",
    )
    labels_command.add_argument(
        "--agreement",
        action="store_true",
        help="instead: each pair of annotators' agreement (Cohen's kappa) and the abstracts they disagree on",
    )

    report = commands.add_parser(
        "report", help="an overview of a tagged file as one HTML page (areas, confidence, what to look at)"
    )
    report.add_argument(
        "tags", metavar="TAGS", help="the output of tagger predict (.csv, .jsonl, .parquet, .xlsx)"
    )
    report.add_argument(
        "-o", "--output", metavar="FILE", default="report.html", help="where (default report.html)"
    )
    model(report)
    labels(report)
    report.add_argument(
        "--abstracts",
        metavar="DIR",
        default="seeds",
        help="where labelled abstracts are kept (default seeds)",
    )
    report.add_argument(
        "--label-column",
        metavar="NAME",
        help="a column of TAGS (kept with predict --keep) holding each abstract's hand label",
    )

    train = commands.add_parser(
        "train", help="train a model from the hand labels (or a labelled file) and save it"
    )
    training_data(train)
    recipe(train, "the model in --model")
    train.add_argument(
        "--model", metavar="DIR", default=DEFAULT_MODEL_DIR, help="where to save (default models)"
    )

    evaluate = commands.add_parser(
        "evaluate",
        help="cross-validated accuracy, macro-F1, calibration, per-area table; "
        "with --model and --data: a saved model on a labelled test file",
    )
    training_data(evaluate)
    recipe(evaluate, f"the model in ./{DEFAULT_MODEL_DIR}")
    evaluate.add_argument(
        "--model",
        metavar="DIR",
        help="test this saved model on --data (labelled abstracts it was not trained on) "
        "instead of cross-validating the training",
    )
    evaluate.add_argument(
        "--plots", metavar="DIR", help="write confusion-matrix.png and reliability.png here"
    )
    evaluate.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (default), or json: every figure as one JSON object on stdout",
    )

    init = commands.add_parser(
        "init", help="make a project here (or in DIR): the default taxonomy and the shipped model's labels"
    )
    init.add_argument("folder", nargs="?", default=".", metavar="DIR", help="where (default: this folder)")
    init.add_argument(
        "--empty", action="store_true", help="start with no labels (for a taxonomy of your own)"
    )
    return parser


def _checked(option: str):
    """An argparse type: the option's value checked by :func:`tagger.checks.number` as its
    row of the table says (``--top-k``: ``top_k``, the row Python's argument has too)."""
    from .checks import number

    return lambda text: number(text, option, option.lstrip("-").replace("-", "_"), from_text=True)


def _share(text: str) -> float:
    """An argparse type: a share above 0, at most 1 (``0.2``: a fifth)."""
    try:
        share = float(text)
    except ValueError:
        share = float("nan")
    if not 0 < share <= 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} is no share: give a number above 0, at most 1 (0.2: a fifth)"
        )
    return share


def _name(text: str) -> str:
    """An argparse type: an annotator's name (:func:`tagger.labelstore.annotator_name`)."""
    from .labelstore import annotator_name

    try:
        return annotator_name(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _names(text: str) -> list[str]:
    """An argparse type: names separated by commas, each once (``ana,ben``), each a name."""
    names = list(dict.fromkeys(_name(name) for name in text.split(",") if name.strip()))
    if not names:
        raise argparse.ArgumentTypeError(f"no name in {text!r}: give names separated by commas (ana,ben)")
    return names
