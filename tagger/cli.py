"""The ``tagger`` command: argument parsing and printing; the work is done by the library."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence

from . import __version__, corpus, output
from .errors import TaggerError, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors exit 1, not argparse's 2
        raise UsageError(message, fix=f"See '{self.prog} --help'.")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tagger", description="Tag research abstracts with a research area and a confidence."
    )
    parser.add_argument("--version", action="version", version=f"tagger {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    predict = commands.add_parser("predict", help="tag every abstract in files, folders or stdin (-)")
    predict.add_argument("paths", nargs="+", metavar="PATH", help=".txt, .csv or .jsonl files, folders, or -")
    predict.add_argument("--model", metavar="DIR", help="model folder (default: the shipped model)")
    predict.add_argument(
        "--format", choices=output.FORMATS, default="csv", help="output format (default csv)"
    )
    predict.add_argument("--output", metavar="FILE", help="write here instead of stdout (atomically)")
    predict.add_argument("--input-format", choices=corpus.FORMATS, help="read every input as this format")
    predict.add_argument("--encoding", default="utf-8", help="text encoding of the inputs (default utf-8)")
    predict.set_defaults(run=_predict)

    for name, help_text in (
        ("train", "train a model from the hand labels (or a labelled file) and save it"),
        ("evaluate", "cross-validated accuracy, macro-F1 and a per-area table"),
    ):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("--data", metavar="FILE", help="labelled .csv/.jsonl with 'abstract' and 'area'")
        command.add_argument(
            "--labels", metavar="DIR", default="labels", help="taxonomy and labels (default labels)"
        )
        command.add_argument(
            "--abstracts",
            metavar="PATH",
            nargs="+",
            default=["seeds"],
            help="abstracts the labels name (default seeds)",
        )
        if name == "train":
            command.add_argument(
                "--model", metavar="DIR", default="models", help="where to save (default models)"
            )
        command.set_defaults(run=_train if name == "train" else _evaluate)
    return parser


def _predict(args: argparse.Namespace) -> int:
    from .batch import tag_files
    from .model import load_model

    model = load_model(args.model)
    report = corpus.ReadReport()
    areas: Counter[str] = Counter()
    tagged = tag_files(
        args.paths, model, input_format=args.input_format, encoding=args.encoding, report=report
    )
    with output.open_output(args.output) as stream:
        writer = output.RowWriter(stream, args.format)
        for abstract, prediction in tagged:
            writer.write(output.row(abstract, prediction))
            areas[prediction.area] += 1
    per_area = ", ".join(f"{area} {n}" for area, n in areas.most_common())
    headings = f"; {len(report.headings)} heading(s) not tagged" if report.headings else ""
    print(
        f"tagged {report.read} abstract(s){headings}" + (f": {per_area}" if per_area else ""), file=sys.stderr
    )
    return 0


def _training_set(args: argparse.Namespace):
    from .labels import load_training_set, read_labelled_file

    return read_labelled_file(args.data) if args.data else load_training_set(args.labels, args.abstracts)


def _train(args: argparse.Namespace) -> int:
    from .training import train

    model = train(_training_set(args))
    model.save(args.model)
    figures = model.card["evaluation"]
    print(
        f"trained on {figures['labelled_abstracts']} labelled abstracts; {figures['scheme']}: "
        f"accuracy {figures['accuracy']:.3f}, macro-F1 {figures['macro_f1']:.3f}; saved to {args.model}",
        file=sys.stderr,
    )
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from .evaluate import format_report
    from .training import TrainingSettings, calibrate

    _, report = calibrate(_training_set(args), TrainingSettings())
    print(format_report(report))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 usage error, 2 bad input)."""
    try:
        args = _parser().parse_args(argv)
        return args.run(args)
    except TaggerError as error:
        print(f"tagger: {error}", file=sys.stderr)
        return error.exit_status
    except KeyboardInterrupt:
        print("tagger: interrupted", file=sys.stderr)
        return 130
