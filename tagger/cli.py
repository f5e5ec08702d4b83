"""The ``tagger`` command: argument parsing and printing; the work is done by the library."""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import signal
import sys
import threading
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from . import __version__, output, reading
from .errors import InputError, TaggerError, UsageError, WorkerError
from .prediction import COLUMNS as PREDICTION_COLUMNS
from .prediction import NO_AREA
from .workers import default_jobs as batch_jobs

DEFAULT_MODEL_DIR = "models"
EXIT_SKIPPED = 3  # --skip-bad left records out
PROGRESS_DELAY = 1.0  # seconds before a progress bar shows


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors exit 1, not argparse's 2
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
    options = set()
    for action in parser._actions:
        options.update(o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                options |= _option_strings(command)
    return options


def _parser() -> argparse.ArgumentParser:
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

    def label_column(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--label-column", metavar="NAME", default="area", help="with --data: of the areas (default area)"
        )

    def inputs(command: argparse.ArgumentParser, what: str, piped: bool = False) -> None:
        command.add_argument(
            "paths",
            nargs="*" if piped else "+",
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
        type=_checked("--top-k", low=1, integer=True),
        help="tags: the K most likely areas (with --min-confidence, those at least that likely); "
        "default: the area, and the runner-up when at least 0.15 likely",
    )
    predict.add_argument(
        "--min-confidence",
        metavar="P",
        type=_checked("--min-confidence", low=0.0, high=1.0),
        help="tags: every area at least this likely (with --top-k, at most K of them)",
    )
    predict.add_argument(
        "--keep",
        metavar="COLUMNS",
        help="input columns to carry into the output, comma-separated (title,doi), or all",
    )
    predict.add_argument(
        "--review-below",
        metavar="X",
        type=_checked("--review-below", low=0.0, high=1.0),
        help="flag confidence below X (0 to 1) for review",
    )
    predict.add_argument(
        "--jobs",
        type=_checked("--jobs", low=1, integer=True, also=(-1,)),
        metavar="N",
        help=f"processes to tag with (default and -1: all {batch_jobs()} cores)",
    )
    predict.add_argument("--quiet", action="store_true", help="no progress bar")
    predict.set_defaults(run=_predict)

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
        type=_checked("--terms", low=1, integer=True),
        default=10,
        metavar="N",
        help="terms to show (default 10)",
    )
    model(explain)
    explain.set_defaults(run=_explain)

    suggest = commands.add_parser(
        "suggest", help="the unlabelled abstracts whose labels would teach the model most"
    )
    inputs(suggest, "abstracts to choose from")
    suggest.add_argument(
        "--n", type=_checked("--n", low=1, integer=True), default=10, help="how many (default 10)"
    )
    suggest.add_argument(
        "--format", choices=("text", "jsonl"), default="text", help="text lines, or one JSON object a line"
    )
    model(suggest)
    labelled(suggest)
    suggest.set_defaults(run=_suggest)

    label = commands.add_parser("label", help="label abstracts by hand, most useful first")
    inputs(label, "abstracts to label")
    label.add_argument(
        "--n", type=_checked("--n", low=1, integer=True), default=20, help="how many to show (default 20)"
    )
    model(label)
    labelled(label)
    label.add_argument(
        "--relabel",
        action="store_true",
        help="review labelled abstracts instead, those whose labels the model doubts most first",
    )
    label.add_argument(
        "--web",
        action="store_true",
        help="label in a web page served on this machine only (127.0.0.1), with a retrain button",
    )
    label.add_argument(
        "--port",
        type=_checked("--port", low=0, high=65535, integer=True),
        help="with --web: the port (default: a free one)",
    )
    label.set_defaults(run=_label)

    report = commands.add_parser(
        "report", help="an overview of a tagged file as one HTML page (areas, confidence, what to look at)"
    )
    report.add_argument("tags", metavar="TAGS", help="the output of tagger predict (.csv, .jsonl, .parquet)")
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
    report.set_defaults(run=_report)

    train = commands.add_parser(
        "train", help="train a model from the hand labels (or a labelled file) and save it"
    )
    training_data(train)
    recipe(train, "the model in --model")
    train.add_argument(
        "--model", metavar="DIR", default=DEFAULT_MODEL_DIR, help="where to save (default models)"
    )
    train.set_defaults(run=_train)

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
    evaluate.set_defaults(run=_evaluate)

    init = commands.add_parser(
        "init", help="make a project here (or in DIR): the default taxonomy and the shipped model's labels"
    )
    init.add_argument("folder", nargs="?", default=".", metavar="DIR", help="where (default: this folder)")
    init.add_argument(
        "--empty", action="store_true", help="start with no labels (for a taxonomy of your own)"
    )
    init.set_defaults(run=_init)
    return parser


def _init(args: argparse.Namespace) -> int:
    from .labelstore import LABELS_FILE
    from .project import NOTE_FILE, init

    made = init(args.folder, empty=args.empty)
    for path in made:
        what = ""
        if path.name == LABELS_FILE:
            with open(path, newline="", encoding="utf-8") as stream:
                count = sum(1 for _ in csv.reader(stream)) - 1
            what = (
                f": {count} labels the shipped model learnt from (--empty: none)"
                if count
                else ": no labels yet"
            )
        elif path.is_dir() and not args.empty:
            what = ": their texts"
        print(f"made {path}{'/' if path.is_dir() else ''}{what}", file=sys.stderr)
    print(f"see {Path(args.folder) / NOTE_FILE} for what goes where", file=sys.stderr)
    return 0


def _keep(value: str | None) -> tuple[str, ...]:
    """--keep: the column names, or the readers' KEEP_ALL for 'all'."""
    if value is None:
        return ()
    if value.strip().lower() == "all":
        return reading.KEEP_ALL
    names = tuple(name.strip() for name in value.split(",") if name.strip())
    if not names:
        raise UsageError(
            f"--keep {value!r} names no column", fix="Give column names, comma-separated, or all."
        )
    return names


def _checked(name: str, **limits):
    """An argparse type: the option's value checked by :func:`tagger.checks.number`."""
    from .checks import number

    return lambda text: number(text, name, from_text=True, **limits)


def _model_folder(given: str | None) -> str | None:
    """The model folder a command uses: the one given, else ``./models`` when it holds a
    model, else None (the shipped model)."""
    from .model import CARD_FILE

    if given is None and (Path(DEFAULT_MODEL_DIR) / CARD_FILE).is_file():
        return DEFAULT_MODEL_DIR
    return given


def _load_model(directory: str | None):
    from .model import load_model

    return load_model(_model_folder(directory))


def _which_model(given: str | None, model) -> str:
    """One line saying which model made an output: where it was found and what it learnt."""
    if model.card.training_data.labelled_abstracts == 0:
        return (
            "model: a first one, learnt from the areas' descriptions alone (no hand labels yet: "
            "label some, then 'tagger train'); not saved"
        )
    if given is not None:
        where = given
    elif _model_folder(None) is not None:
        where = f"{DEFAULT_MODEL_DIR}/ of this folder (--model names another)"
    else:
        where = "the shipped model"
    data = model.card.training_data
    trained = f"trained {model.card.created[:10]} on {data.labelled_abstracts} labelled abstracts"
    return f"model: {where}, {trained} of {data.origin}"


def _read_options(args: argparse.Namespace, report: reading.ReadReport, keep: tuple[str, ...] = ()) -> dict:
    columns = reading.Columns.given(args.column, args.title_column, args.id_column, keep=keep)
    return {
        "input_format": args.input_format,
        "encoding": args.encoding,
        "skip_bad": args.skip_bad,
        "report": report,
        "columns": columns,
    }


def _report_reading(report: reading.ReadReport) -> int:
    """Print what reading left out, on stderr; the exit status: 3 when records were skipped."""
    if report.skipped:
        print(f"skipped {len(report.skipped)} bad record(s):", file=sys.stderr)
        for line in report.skipped:
            print(f"  {line}", file=sys.stderr)
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    return EXIT_SKIPPED if report.skipped else 0


def _predict(args: argparse.Namespace) -> int:
    from .batch import tag_blocks

    if not args.paths:  # `cmd | tagger predict` reads what is piped in
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError(
                "no abstracts to tag", fix="Name files or folders (or - for stdin), or pipe text in."
            )
        args.paths = [reading.STDIN]
    model = _load_model(args.model)
    threshold = model.threshold(args.review_below)
    jobs = batch_jobs() if args.jobs in (None, -1) else args.jobs
    report = reading.ReadReport()
    areas: Counter[str] = Counter()
    needs_review = 0
    keep = _keep(args.keep)
    abstracts = reading.read_abstracts(args.paths, **_read_options(args, report, keep))
    blocks = tag_blocks(abstracts, model, jobs=jobs)
    output.check_output(args.output, args.paths)  # (a folder, an input: said before the format)
    target = output.format_for(args.output, args.format)
    layout = output.Layout(args.top_k, args.min_confidence, keep)
    with (
        _signals_between_chunks() as check,
        contextlib.closing(blocks),
        output.open_output(
            args.output, args.paths, binary=target.format == "parquet", compress=target.gzip
        ) as stream,
        _progress(args, report) as update,
    ):
        writer = output.RowWriter(stream, target.format, layout)
        for chunk, probabilities in blocks:
            check()
            chunk_rows = output.ChunkRows(chunk, probabilities, model, threshold, layout)
            writer.write_rows(chunk_rows)
            areas.update(chunk_rows.table["area"])
            needs_review += sum(chunk_rows.table["needs_review"])
            update()
        writer.close()
    if writer.unwritten:
        names = sorted(writer.unwritten)
        listed = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        report.notes.append(
            f"{len(names):,} input column(s) first seen after the output's columns were fixed "
            f"({listed}): not written (name them with --keep, or write JSON lines)"
        )
    headings = f" ({len(report.headings)} heading(s) skipped)" if report.headings else ""
    ties = areas.pop(NO_AREA, 0)
    per_area = ", ".join(
        [f"{area} {n}" for area, n in areas.most_common()]
        + ([f"no area {ties} (two areas equally likely: no word the model knows?)"] if ties else [])
    )
    print(
        f"tagged {report.read} abstract(s) from {report.files} file(s){headings}"
        + (f": {per_area}" if per_area else "")
        + f"; {needs_review} need review (confidence below {threshold:.2f})",
        file=sys.stderr,
    )
    status = _report_reading(report)
    print(_which_model(args.model, model), file=sys.stderr)
    return status


@contextlib.contextmanager
def _signals_between_chunks():
    """Ctrl-C and SIGTERM stop a run at once while no worker pool runs (reading the input,
    waiting for stdin, tagging here); while one does, between chunks, where stopping is clean
    (the pool is shut down, the output left as it was), not in the middle of the pool's code,
    unless the signal comes twice."""
    from .batch import pool_running

    received: list[int] = []
    stops = [signal.SIGINT, signal.SIGTERM]
    if threading.current_thread() is not threading.main_thread():  # signals reach the main one only
        yield lambda: None
        return

    def check() -> None:
        if signal.SIGINT in received:
            raise KeyboardInterrupt
        if received:
            raise SystemExit(128 + received[0])

    def receive(signum: int, frame) -> None:
        received.append(signum)
        if not pool_running() or len(received) > 1:
            check()

    previous = {signum: signal.signal(signum, receive) for signum in stops}
    try:
        yield check
        check()
    except WorkerError:
        check()  # a signal to the whole job ended the workers too: it is the signal's exit
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def _stages():
    """On a terminal, what training is doing, a line a stage with the time since it began
    (training's log, :mod:`tagger.training`); nothing elsewhere."""
    import logging
    import time

    if not sys.stderr.isatty():
        yield
        return
    began = time.monotonic()

    class Stage(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            print(
                f"tagger: [{time.monotonic() - began:5.0f} s] {record.getMessage()}",
                file=sys.stderr,
                flush=True,
            )

    log, handler = logging.getLogger("tagger"), Stage()
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield
    finally:
        log.removeHandler(handler)


@contextlib.contextmanager
def _progress(args: argparse.Namespace, report: reading.ReadReport, delay: float = PROGRESS_DELAY):
    """A progress bar over the bytes read, on stderr, shown after a second; none with --quiet,
    when stderr is not a terminal, or on stdin (no size known)."""
    sizes = [Path(p) for p in args.paths]
    if args.quiet or not sys.stderr.isatty() or reading.STDIN in args.paths:
        yield lambda: None
        return
    from tqdm import tqdm

    tqdm.monitor_interval = 0  # no monitor thread: worker processes can then be forked
    total = sum(
        f.stat().st_size for p in sizes for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()
    )
    with tqdm(total=total, unit="B", unit_scale=True, delay=delay, file=sys.stderr, leave=False) as bar:
        seen = 0

        def update() -> None:
            nonlocal seen
            bar.update(report.bytes_read - seen)
            seen = report.bytes_read

        yield update


def _refuse_missing_path(argument: str) -> None:
    """A path that does not exist: an error with the closest names in its folder."""
    import difflib

    path = Path(argument)
    if path.exists() or argument == reading.STDIN:
        return
    parent = path.parent if path.parent.is_dir() else None
    names = [p.name for p in parent.iterdir()] if parent else []
    close = difflib.get_close_matches(path.name, names, n=3)
    hint = f"Did you mean {', '.join(str(parent / name) for name in close)}? " if close else ""
    raise InputError("no such file or directory", where=argument, fix=f"{hint}To explain a text, use --text.")


def _explain(args: argparse.Namespace) -> int:
    model = _load_model(args.model)
    if args.text:
        abstracts = [
            reading.Abstract(reading.abstract_id(text), reading.document(text), "<text>", i, 1)
            for i, text in enumerate(args.paths, start=1)
        ]
    else:
        for path in args.paths:
            _refuse_missing_path(path)
        abstracts = reading.read_abstracts(args.paths)
    for abstract, prediction in _explained(abstracts, model):
        terms = prediction.top_terms[: args.terms]
        if args.format == "jsonl":
            record = {"source": abstract.source, "position": abstract.position, "id": abstract.id}
            record.update({name: getattr(prediction, name) for name in PREDICTION_COLUMNS})
            record["top_terms"] = [[term, round(push, 4)] for term, push in terms]
            print(json.dumps(record, ensure_ascii=False))
            continue
        print(f"{abstract.source}:{abstract.position}  id {abstract.id}")
        print(
            f"  {prediction.area} {prediction.confidence:.2f}, runner-up {prediction.runner_up} "
            f"{prediction.runner_up_confidence:.2f}" + ("  (needs review)" if prediction.needs_review else "")
        )
        for term, push in terms:
            print(f"    {push:+.3f}  {term}")
    print(_which_model(args.model, model), file=sys.stderr)
    return 0


def _explained(abstracts, model):
    """Each abstract with its explained prediction, a chunk at a time (any input size)."""
    from .batch import chunked

    for chunk in chunked(abstracts):
        yield from zip(chunk, model.predict([a.document for a in chunk], explain=True))


def _store(args: argparse.Namespace):
    """Where the labels are (see :mod:`tagger.labelstore`): the user's labelled file
    (--data), or labels/ with the texts in --abstracts."""
    from .labelstore import LabelledFile, ProjectLabels

    if args.data:
        return LabelledFile(args.data, _labelled_columns(args))
    return ProjectLabels(args.labels, args.abstracts)


def _labelled_columns(args: argparse.Namespace) -> reading.Columns:
    """The columns of a labelled --data file: --column, --title-column, --label-column."""
    return reading.Columns.given(args.column, args.title_column, area=args.label_column)


def _queue(args: argparse.Namespace, model, store, report: reading.ReadReport, abstracts=None):
    """The abstracts to label (or review), most useful first; ``abstracts``: the pile, read
    already (else read from the paths given)."""
    from .labelling import relabel_queue, suggest

    current = store.current()
    if abstracts is None:
        abstracts = reading.read_abstracts(args.paths, **_read_options(args, report))
    if getattr(args, "relabel", False):
        return relabel_queue(abstracts, model, current, args.n, _training_set(args))
    return suggest(abstracts, model, args.n, exclude=set(current))


def _suggest(args: argparse.Namespace) -> int:
    report = reading.ReadReport()
    store = _store(args)
    model, _ = _labelling_model(args, store, outside_a_project=True)
    queue = _queue(args, model, store, report)
    if not queue:
        print("nothing to suggest: every abstract given is labelled already", file=sys.stderr)
    for rank, item in enumerate(queue, start=1):
        if args.format == "jsonl":
            print(json.dumps({"rank": rank, **item.record()}, ensure_ascii=False))
            continue
        guesses = ", ".join(f"{slug} {p:.2f}" for slug, p in item.guesses())
        snippet = " ".join(item.abstract.text.split()[:14])
        print(f"{rank:3d}  {item.abstract.id}  margin {item.margin:.2f}  {guesses}  | {snippet}")
    print(_which_model(args.model, model), file=sys.stderr)
    return _report_reading(report)


def _label(args: argparse.Namespace) -> int:
    from .labelling import label_session

    if args.port is not None and not args.web:
        raise UsageError("--port is for the labelling page", fix="Add --web, or leave --port out.")
    store = _store(args)
    model, areas = _labelling_model(args, store)
    report = reading.ReadReport()
    if args.web:
        return _label_on_the_web(args, model, store, areas, report)
    queue = _queue(args, model, store, report)
    status = _report_reading(report)

    def save(abstract: reading.Abstract, area: str):
        answer = store.add(abstract, area)
        if answer.earlier:
            print(f"  (replaces the earlier label {answer.earlier})", flush=True)
        return answer

    def ask(prompt: str) -> str:
        if sys.stdin.isatty():
            return input(prompt)  # with line editing
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        print(f"{prompt}{line.rstrip()}")  # echo piped answers so the transcript reads naturally
        return line

    def say(text: str) -> None:
        print(text, flush=True)

    if not queue:
        print("nothing to label: every abstract given is labelled already", file=sys.stderr)
        return status
    print(_which_model(args.model, model), file=sys.stderr)
    _say_queue(queue, sys.stdout)
    _say_saved(label_session(queue, areas, save, ask, say, unsave=store.undo), store)
    return status


def _labelling_model(args: argparse.Namespace, store, outside_a_project: bool = False):
    """The model that orders a labelling queue and guesses, and the areas to answer with:
    for a user's labelled file (--data), the model's areas, which must be the file's; for a
    project, its taxonomy's areas, which must be the model's, except in a project of one's
    own areas with no labels yet, where a first model learns from the areas' descriptions.
    ``outside_a_project``: with no taxonomy here, the model's own areas (for suggest)."""
    from .labels import AREAS_FILE, Area, load_areas

    model = _load_model(args.model)
    if args.data:  # the user's own areas and labelled file
        _refuse_other_areas(model, store.current(), args.data)
        return model, tuple(Area(slug, slug) for slug in model.areas)
    if not model.card.training_data.uses_area_descriptions:
        raise UsageError(
            f"the model was trained on your own labelled file ({model.card.training_data.origin})",
            fix="Give that file with --data: answers are added to it.",
        )
    if outside_a_project and not (Path(args.labels) / AREAS_FILE).exists():
        return model, tuple(Area(area.slug, area.name) for area in model.card.areas)
    areas = load_areas(Path(args.labels) / AREAS_FILE)
    if set(model.areas) == {area.slug for area in areas}:
        return model, areas
    if args.model is not None or store.current():
        raise UsageError(
            f"the model's areas differ from {Path(args.labels) / AREAS_FILE}",
            fix="Retrain with 'tagger train', or give your own labelled file with --data.",
        )
    from .training import descriptions_model

    return descriptions_model(areas), areas


def _refuse_other_areas(model, labels: dict[str, str], data: str) -> None:
    """A model that does not know the areas of the labelled file answers would go to: its
    areas would be offered, and written into the file (the shipped model's 'llm' in a file of
    one's own areas)."""
    theirs = set(labels.values())
    if not theirs <= set(model.areas):  # (a file of some of the model's areas is of its taxonomy)
        listed = ", ".join(sorted(theirs)[:8]) + (", ..." if len(theirs) > 8 else "")
        raise UsageError(
            f"the model's areas ({', '.join(model.areas[:8])}{', ...' if len(model.areas) > 8 else ''}) "
            f"are not those of {data} ({listed})",
            fix=f"Train a model on it first (tagger train --data {data} --model mine) and give --model mine.",
        )


def _label_on_the_web(args: argparse.Namespace, model, store, areas, report: reading.ReadReport) -> int:
    """label --web: the same queue and store, answered in a page (see :mod:`tagger.web`)."""
    from .web import PILE_COMPARED, labelling_app, serve

    pile: list[reading.Abstract] = []  # the first abstracts, for the retrain's comparison and the report

    def keeping(abstracts):
        for abstract in abstracts:
            if len(pile) < PILE_COMPARED:
                pile.append(abstract)
            yield abstract

    queue = _queue(
        args,
        model,
        store,
        report,
        abstracts=keeping(reading.read_abstracts(args.paths, **_read_options(args, report))),
    )
    status = _report_reading(report)
    app = labelling_app(
        queue, areas, model, store, pile, ", ".join(args.paths), args.model or DEFAULT_MODEL_DIR,
        lambda: _training_set(args),
    )  # fmt: skip
    print(_which_model(args.model, model), file=sys.stderr)
    _say_queue(queue, sys.stderr)

    def started(address: str) -> None:
        print(f"labelling page: {address}", flush=True)
        print(
            "(this machine only; Ctrl-C stops it, every answer is saved already)", file=sys.stderr, flush=True
        )

    try:
        serve(app, args.port or 0, on_start=started)
    except KeyboardInterrupt:
        pass
    except OSError as error:
        raise UsageError(
            f"cannot serve the page on port {args.port} ({error.strerror or error})",
            fix="Give another --port, or leave it out for a free one.",
        ) from None
    _say_saved(app.session.result, store)
    return status


def _say_queue(queue, stream) -> None:
    print(
        f"{len(queue)} abstract(s) to label, most useful first. Answers are saved at once.",
        file=stream,
        flush=True,
    )


def _say_saved(result, store) -> None:
    """The last line of a labelling session: what it saved, and where."""
    print(
        f"labelled {len(result.labelled)}, skipped {result.skipped}; saved to {store.where}. "
        "Retrain with 'tagger train'.",
        file=sys.stderr,
    )


def _report(args: argparse.Namespace) -> int:
    from .labelstore import ProjectLabels
    from .report import build, read_tags

    if Path(args.output).resolve() == Path(args.tags).resolve():
        raise UsageError(
            "the report would overwrite the tags it reads", where=args.output, fix="Give another -o."
        )
    output.check_output(args.output)
    model = _load_model(args.model)
    labels = {}
    if args.label_column is None and (Path(args.labels) / "labels.csv").is_file():
        labels = ProjectLabels(args.labels, args.abstracts).by_name()
    overview = read_tags(args.tags, labels, args.label_column)
    page = build(overview, model, f"tagger report: {Path(args.tags).name}")
    with output.open_output(args.output) as stream:  # the one output rule of predict -o
        stream.write(page)
    print(f"wrote {args.output}: {overview.rows} abstracts", file=sys.stderr)
    print(_which_model(args.model, model), file=sys.stderr)
    return 0


def _training_set(args: argparse.Namespace):
    """The labels as a training set: the user's labelled file (--data), or the project's
    (--labels, with the texts in --abstracts: one folder for label, any paths for train)."""
    from .labels import load_training_set, read_labelled_file

    if args.data:
        return read_labelled_file(args.data, _labelled_columns(args))
    abstracts = [args.abstracts] if isinstance(args.abstracts, str) else args.abstracts
    return load_training_set(args.labels, abstracts)


def _train(args: argparse.Namespace) -> int:
    from .evaluate import accuracy_text, ece_text, format_comparison
    from .retraining import retrain

    _refuse_unwritable(args.model)
    training_set, pile, _ = _recipe(args, None)
    texts = [] if args.data else [a.document for a in reading.read_abstracts(args.abstracts)]
    with _stages():
        done = retrain(training_set, args.model, texts, unlabelled=pile, search=args.search)
    model = done.model
    figures, labelled = model.card.evaluation, model.card.training_data.labelled_abstracts
    measured = (
        f" ({figures.labelled_abstracts} cross-validated)" if figures.labelled_abstracts != labelled else ""
    )
    print(
        f"trained on {labelled} labelled abstracts{measured}; {figures.scheme}: "
        f"accuracy {accuracy_text(figures.accuracy, figures.labelled_abstracts)}, "
        f"macro-F1 {figures.macro_f1:.3f}, ECE {ece_text(figures.ece, figures.labelled_abstracts)}; "
        f"saved to {args.model}",
        file=sys.stderr,
    )
    _say_if_reused(model.card.settings_selection)
    if args.unlabelled and model.card.unlabelled is None:
        why = "every one is labelled" if pile else "it holds no abstracts"
        print(f"note: no unlabelled abstract in --unlabelled ({why}): no self-training", file=sys.stderr)
    if model.card.unlabelled is not None:
        pile_record = model.card.unlabelled
        print(
            f"learnt from {pile_record.pile_abstracts} unlabelled abstracts: {pile_record.pseudo_labelled} "
            f"pseudo-labelled in {pile_record.rounds} round(s) (never written to the labels)",
            file=sys.stderr,
        )
    if done.previous is not None:
        print(format_comparison(done.comparison), file=sys.stderr)
    if (added := done.new_labels) is not None:
        print(
            f"on the {added.labelled} label(s) new since the previous model: it tagged "
            f"{added.previous_right} ({added.previous_right / added.labelled:.0%}) right; the new model, "
            f"cross-validated, {added.accuracy:.0%}",
            file=sys.stderr,
        )
    return 0


def _recipe(args: argparse.Namespace, folder: str | None):
    """What train runs and evaluate measures: the labels, the pile (--unlabelled, or None)
    and the model in ``folder`` that a retrain replaces (None when there is none)."""
    from .retraining import previous_model

    training_set = _training_set(args)
    pile = [a.document for a in reading.read_abstracts(args.unlabelled)] if args.unlabelled else None
    return training_set, pile, previous_model(folder) if folder else None


def _say_if_reused(chosen) -> None:
    """Say so when the settings were kept from the model being replaced."""
    if chosen is not None and chosen.reused:
        print(
            f"kept the settings the previous model chose (reused from the previous model ({chosen.reused})); "
            "--search chooses anew",
            file=sys.stderr,
        )


def _refuse_unwritable(folder: str) -> None:
    """Refuse a model folder that cannot be written, before the work of training."""
    from .errors import OutputError

    path = Path(folder)
    existing = path if path.exists() else next((p for p in path.parents if p.exists()), Path("."))
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(
            f"cannot write {'there' if existing == path else f'in {existing}'} (no permission, or read-only)",
            where=folder,
            fix="Choose another --model, or check the folder's permissions.",
        )


def _evaluate(args: argparse.Namespace) -> int:
    from .evaluate import format_report, require_matplotlib, write_plots
    from .training import validate

    if args.plots:
        require_matplotlib()  # before minutes of work, not after
    if args.model is not None:
        evaluation, review, confidence, correct = _test_model(args)
    else:
        training_set, pile, previous = _recipe(args, DEFAULT_MODEL_DIR)
        reuse = previous.card if previous is not None and not args.search else None
        with _stages():
            _, validation, _ = validate(training_set, unlabelled=pile, previous=reuse)
        _say_if_reused(validation.selection)
        evaluation, review = validation.evaluation, validation.review
        confidence, correct = validation.confidence, validation.correct
    print(format_report(evaluation, review))
    if args.plots:
        for path in write_plots(evaluation, confidence, correct, args.plots):
            print(f"wrote {path}", file=sys.stderr)
    return 0


def _test_model(args: argparse.Namespace):
    """evaluate --model DIR --data FILE: the saved model on labelled abstracts."""
    from .evaluate import test_model
    from .labels import read_labelled_file
    from .model import load_model

    if not args.data:
        raise UsageError(
            "--model needs --data: the labelled abstracts to test it on",
            fix="Give a labelled .csv/.jsonl it was not trained on "
            "(without --model, evaluate cross-validates).",
        )
    model = load_model(args.model)
    test = read_labelled_file(args.data, _labelled_columns(args))
    seen = model.card.training_data.labels or {}
    trained_on = sum(text_id in seen for text_id in test.ids)
    if trained_on:
        print(
            f"note: the model was trained on {trained_on} of these {len(test.texts)} labelled abstracts: "
            "its figures on them are not held out",
            file=sys.stderr,
        )
    return test_model(model, test.texts, test.labels, test.ids, args.data, f"the model in {args.model}")


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A :class:`~tagger.errors.TaggerWarning` as one line on stderr; others as Python shows them."""
    from .errors import TaggerWarning

    if issubclass(category, TaggerWarning):
        print(f"tagger: warning: {message}", file=sys.stderr)
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 usage error, 2 bad input,
    3 records skipped with --skip-bad, 70 internal error, 130 interrupted)."""
    try:
        parser = _parser()
        if "_ARGCOMPLETE" in os.environ:  # shell completion: pip install 'tagger[completion]'
            with contextlib.suppress(ImportError):
                import argcomplete

                argcomplete.autocomplete(parser)
        args = parser.parse_args(argv)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.run(args)
    except TaggerError as error:
        print(f"tagger: {error}", file=sys.stderr)
        return error.exit_status
    except KeyboardInterrupt:
        print("tagger: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as error:  # disk full, permission denied, ...
        where = f"{error.filename}: " if error.filename else ""
        print(f"tagger: {where}{error.strerror or error}", file=sys.stderr)
        return 2
    except Exception as error:  # a bug: one line for the user, the traceback on request
        if os.environ.get("TAGGER_DEBUG"):
            raise
        print(
            f"tagger: internal error ({type(error).__name__}: {error}). "
            "Please report it with the command you ran; TAGGER_DEBUG=1 shows the traceback.",
            file=sys.stderr,
        )
        return 70
