"""The ``tagger`` command: argument parsing and printing; the work is done by the library."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import logging
import os
import sys
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from . import arguments, feedback, interchange, output, reading
from .errors import InputError, TaggerError, UsageError
from .labelstore import NONE
from .prediction import COLUMNS as PREDICTION_COLUMNS
from .prediction import NO_AREA
from .project import Project
from .schema import located
from .terminal import say
from .workers import default_jobs as batch_jobs

EXIT_SKIPPED = 3  # --skip-bad left records out
OS_FIXES = {  # what to do about a failure of the system, by errno
    errno.ENOSPC: "Free some space and run it again (nothing was left half written).",
    errno.EDQUOT: "Free some space and run it again (nothing was left half written).",
    errno.EACCES: "Check its permissions, or choose another place.",
    errno.EPERM: "Check its permissions, or choose another place.",
    errno.EROFS: "It is on a read-only disk: choose another place.",
}


def _init(args: argparse.Namespace) -> int:
    from .labelstore import LABELS_FILE, read_labels_file
    from .project import NOTE_FILE, init

    made = init(args.folder, empty=args.empty)
    for path in made:
        what = ""
        if path.name == LABELS_FILE:
            count = len(read_labels_file(path).records)
            what = (
                f": {count} labels the shipped model learnt from (--empty: none)"
                if count
                else ": no labels yet"
            )
        elif path.is_dir() and not args.empty:
            what = ": their texts"
        say(f"made {path}{'/' if path.is_dir() else ''}{what}")
    say(f"see {Path(args.folder) / NOTE_FILE} for what goes where")
    return 0


def _keep(values: list[str] | None) -> tuple[str, ...]:
    """--keep, given once or more: the column names, or the readers' KEEP_ALL for 'all'."""
    if not values:
        return ()
    if any(value.strip().lower() == "all" for value in values):
        return reading.KEEP_ALL
    names = tuple(
        dict.fromkeys(name.strip() for value in values for name in value.split(",") if name.strip())
    )
    if not names:
        raise UsageError(
            f"--keep {','.join(values)!r} names no column", fix="Give column names, comma-separated, or all."
        )
    return names


def _project(args: argparse.Namespace):
    """Where the command's labels, texts and model are (see :class:`tagger.project.Project`)."""
    data = getattr(args, "data", None)
    abstracts = getattr(args, "abstracts", ("seeds",))
    return Project(
        labels=getattr(args, "labels", "labels"),
        abstracts=(abstracts,) if isinstance(abstracts, str) else tuple(abstracts),
        model_dir=getattr(args, "model", None),
        data=data,
        columns=reading.Columns.given(
            args.column, args.title_column, area=args.label_column, sheet=args.sheet
        )
        if data
        else reading.Columns(),
    )


def _read_options(args: argparse.Namespace, report: reading.ReadReport, keep: tuple[str, ...] = ()) -> dict:
    columns = reading.Columns.given(
        args.column, args.title_column, args.id_column, keep=keep, sheet=args.sheet
    )
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
        say(f"skipped {len(report.skipped)} bad record(s):")
        for line in report.skipped:
            say(f"  {line}")
    if left := report.without_abstract:
        listed = ", ".join(left[:10]) + (f", and {len(left) - 10:,} more" if len(left) > 10 else "")
        what = f"left out {len(left):,} record(s) without an abstract, nothing to tag"
        say(f"{what}: {listed}")
    for note in report.notes:
        say(f"note: {note}")
    return EXIT_SKIPPED if report.skipped else 0


def _predict(args: argparse.Namespace) -> int:
    from .batch import signals_between_chunks, tag_blocks

    if args.text and not args.paths:
        raise UsageError("--text with no text", fix='Give the abstracts as arguments: --text "We train..."')
    if not args.paths:  # `cmd | tagger predict` reads what is piped in
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError(
                "no abstracts to tag", fix="Name files or folders (or - for stdin), or pipe text in."
            )
        args.paths = [reading.STDIN]
    project = _project(args)
    model = project.model()
    threshold = model.threshold(args.review_below)
    jobs = batch_jobs() if args.jobs in (None, -1) else args.jobs
    report = reading.ReadReport()
    areas: Counter[str] = Counter()
    needs_review = 0
    keep = _keep(args.keep)
    paths = [] if args.text else args.paths  # files read (never overwritten by --output)
    if args.text:
        abstracts: Iterable = reading.read_texts(args.paths, report)
    else:
        abstracts = reading.read_abstracts(paths, **_read_options(args, report, keep))
    blocks = tag_blocks(abstracts, model, jobs=jobs)
    protected = project.own_folders()
    output.check_output(args.output, paths, protected)  # (said before the format)
    target = output.format_for(args.output, args.format)
    layout = output.Layout(
        args.top_k, args.min_confidence, keep, model.areas if args.all_probabilities else ()
    )
    with (
        signals_between_chunks() as check,
        contextlib.closing(blocks),
        output.open_output(
            args.output,
            paths,
            binary=target.binary,
            compress=target.gzip,
            protected=protected,
        ) as stream,
        feedback.progress(args.quiet, paths, report) as update,
        output.RowWriter(stream, target.format, layout) as writer,
    ):
        for chunk, probabilities in blocks:
            check()
            chunk_rows = output.ChunkRows(chunk, probabilities, model, threshold, layout)
            writer.write_rows(chunk_rows)
            areas.update(chunk_rows.table["area"])
            needs_review += sum(chunk_rows.table["needs_review"])
            update()
    if writer.unwritten:
        names = sorted(writer.unwritten)
        listed = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        report.notes.append(
            f"{len(names):,} input column(s) first seen after the output's columns were fixed "
            f"({listed}): not written (name them with --keep, or write JSON lines)"
        )
    left_out = [f"{len(report.headings)} heading(s) skipped"] if report.headings else []
    if report.without_abstract:
        left_out.append(f"{len(report.without_abstract):,} without an abstract left out")
    headings = f" ({'; '.join(left_out)})" if left_out else ""
    ties = areas.pop(NO_AREA, 0)
    per_area = ", ".join(
        [f"{area} {n}" for area, n in areas.most_common()]
        + ([f"no area {ties} (two areas equally likely: no word the model knows?)"] if ties else [])
    )
    say(
        f"tagged {report.read} abstract(s) "
        + ("given with --text" if args.text else f"from {report.files} file(s){headings}")
        + (f": {per_area}" if per_area else "")
        + f"; {needs_review} need review (confidence below {threshold:.2f})",
    )
    status = _report_reading(report)
    say(project.which_model(model))
    return status


def _refuse_missing_path(argument: str) -> None:
    """A path that does not exist: an error with the closest names in its folder."""
    import difflib

    path = Path(argument)
    if path.exists() or argument == reading.STDIN:
        return
    parent = path.parent if path.parent.is_dir() else None
    names = [p.name for p in parent.iterdir()] if parent else []
    close = difflib.get_close_matches(path.name, names, n=3)
    hint = f"Did you mean {', '.join(str(path.parent / name) for name in close)}? " if close else ""
    raise InputError("no such file or directory", where=argument, fix=f"{hint}To explain a text, use --text.")


def _explain(args: argparse.Namespace) -> int:
    project = _project(args)
    model = project.model()
    if args.text:
        abstracts = reading.read_texts(args.paths, reading.ReadReport())
    else:
        for path in args.paths:
            _refuse_missing_path(path)
        abstracts = reading.read_abstracts(args.paths)
    for abstract, prediction in _explained(abstracts, model):
        terms = prediction.top_terms[: args.terms]
        if args.format == "jsonl":
            record = {**located(abstract), **{name: getattr(prediction, name) for name in PREDICTION_COLUMNS}}
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
    say(project.which_model(model))
    return 0


def _explained(abstracts, model):
    """Each abstract with its explained prediction, a chunk at a time (any input size)."""
    from .batch import chunked

    for chunk in chunked(abstracts):
        yield from zip(chunk, model.predict([a.document for a in chunk], explain=True))


def _queue(args: argparse.Namespace, project, model, store, report: reading.ReadReport, abstracts=None):
    """The abstracts to label (or review), most useful first; ``abstracts``: the pile, read
    already (else read from the paths given)."""
    if abstracts is None:
        abstracts = reading.read_abstracts(args.paths, **_read_options(args, report))
    relabel, overlap = getattr(args, "relabel", False), getattr(args, "overlap", False)
    with feedback.stages():
        return project.queue(abstracts, model, store, args.n, relabel=relabel, overlap=overlap)


def _suggest(args: argparse.Namespace) -> int:
    report = reading.ReadReport()
    project = _project(args)
    store = project.store()
    model, _ = project.labelling_model(store, outside_a_project=True)
    queue = _queue(args, project, model, store, report)
    if not queue:
        say("nothing to suggest: every abstract given is labelled already")
    for rank, item in enumerate(queue, start=1):
        if args.format == "jsonl":
            print(json.dumps({"rank": rank, **item.record()}, ensure_ascii=False))
            continue
        guesses = ", ".join(f"{slug} {p:.2f}" for slug, p in item.guesses())
        snippet = " ".join(item.abstract.text.split()[:14])
        print(f"{rank:3d}  {item.abstract.id}  margin {item.margin:.2f}  {guesses}  | {snippet}")
    say(project.which_model(model))
    return _report_reading(report)


def _labels(args: argparse.Namespace) -> int:
    from .agreement import described_agreement

    project = _project(args)
    protected = project.own_folders()
    tool = args.format in interchange.TOOLS
    if not args.agreement:
        output.check_output(args.output, protected=protected)
        target = output.format_for(args.output, "jsonl" if tool else args.format, default="jsonl")
    rows = project.label_rows()
    if args.agreement:
        print(described_agreement(rows, project.store().skips()))
        return 0
    written, note = len(rows), ""
    if tool:
        written, note = interchange.write(rows, project.taxonomy, args.format, args.output, protected)
    else:
        output.write_table(rows, args.output, target, protected=protected)
    if args.output not in (None, "-"):
        none = sum(row["area"] == NONE for row in rows if not tool or row["abstract"])
        say(f"wrote {args.output}: {written:,} labels" + (f" ({none:,} fit no area)" if none else ""))
    if note:
        say(note)
    return 0


def _label(args: argparse.Namespace) -> int:
    from .labelling import label_session

    for option, given in (("--port", args.port), ("--host", args.host)):
        if given is not None and not args.web:
            raise UsageError(f"{option} is for the labelling page", fix=f"Add --web, or leave {option} out.")
    if not args.paths and not args.review:
        raise UsageError(
            "give the abstracts to label",
            fix="tagger label FILE_OR_FOLDER ... (--review reads the project's labelled abstracts).",
        )
    if args.annotators and (not args.web or args.annotator is not None):
        raise UsageError(
            "--annotators names the people of one labelling page",
            fix="Give --web and names separated by commas (--annotators ana,ben), without --annotator.",
        )
    project = _project(args)
    store = project.store(args.annotator, reviewing=args.review)
    if not args.paths:  # a review: the project's labelled abstracts
        args.paths = [str(folder) for folder in project.abstracts if Path(folder).exists()]
    model, areas = project.labelling_model(store)
    report = reading.ReadReport()
    if args.web:
        return _label_on_the_web(args, project, model, store, areas, report)
    queue = _queue(args, project, model, store, report)
    status = _report_reading(report)

    def save(abstract: reading.Abstract, area: str, topic: str, remark):
        answer = store.add(abstract, area, topic, remark)
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

    def show(text: str) -> None:  # (the session's transcript: on stdout)
        print(text, flush=True)

    if not queue:
        say(
            "nothing to review: every disagreement has a final label"
            if args.review
            else "nothing to label: every abstract given is labelled already"
        )
        return status
    say(project.which_model(model))
    _say_queue(queue, sys.stdout)
    blind = bool(args.overlap or args.relabel)  # (a second pass: see label_session)
    result = label_session(queue, areas, save, ask, show, unsave=store.undo, blind=blind, passed=store.skip)
    _say_saved(result, store)
    return status


def _label_on_the_web(args: argparse.Namespace, project, model, store, areas, report) -> int:
    """label --web: the same queue and store, answered in a page (see :mod:`tagger.web`)."""
    from .web import PILE_COMPARED, labelling_app, serve, served_at

    where = served_at(args.host)
    pile: list[reading.Abstract] = []  # the first abstracts, for the retrain's comparison and the report

    def keeping(abstracts):
        for abstract in abstracts:
            if len(pile) < PILE_COMPARED:
                pile.append(abstract)
            yield abstract

    read = keeping(reading.read_abstracts(args.paths, **_read_options(args, report)))
    with feedback.stages():
        desks = project.desks(read, model, store, args.n, args.annotators or (), args.relabel, args.overlap)
    status = _report_reading(report)
    app = labelling_app(desks, areas, model, project, pile, ", ".join(args.paths))
    say(project.which_model(model))
    _say_queue([item for queue, _ in desks.values() for item in queue], sys.stderr)

    def started(addresses: dict[str, str]) -> None:
        for name, address in addresses.items():
            print(f"labelling page{f' for {name}' if name else ''}: {address}", flush=True)
        say(where.reach())

    try:
        serve(app, args.port or 0, on_start=started, where=where)
    except KeyboardInterrupt:
        pass
    except OSError as error:
        raise where.refused(error, args.port) from None
    for name, session in app.sessions.items():
        _say_saved(session.result, desks[name][1], name)
    return status


def _say_queue(queue, stream) -> None:
    what = (
        "disagreement(s) to settle"
        if queue and queue[0].answers
        else "abstract(s) to label, most useful first"
    )
    print(f"{len(queue)} {what}. Answers are saved at once.", file=stream, flush=True)


def _say_saved(result, store, who: str = "") -> None:
    """The last line of a labelling session: what it saved, and where (``who``: by whom, when
    one page served several annotators)."""
    by = f"{who}: " if who else ""
    say(f"{by}{result.described()}; saved to {store.where}. Retrain with 'tagger train'.")


def _report(args: argparse.Namespace) -> int:
    from .report import build, read_tags

    if Path(args.output).resolve() == Path(args.tags).resolve():
        raise UsageError(
            "the report would overwrite the tags it reads", where=args.output, fix="Give another -o."
        )
    project = _project(args)
    protected = project.own_folders()
    output.check_output(args.output, protected=protected)
    model = project.model()
    labels = project.labels_by_name() if args.label_column is None else {}
    with feedback.stages():
        overview = read_tags(
            args.tags,
            labels,
            args.label_column,
            trained=project.trained_names(model),
            areas=model.areas,
        )
        logging.getLogger("tagger.report").info("writing the report")
        page = build(overview, model, f"tagger report: {Path(args.tags).name}")
    replaced = " (it replaces the report that was there)" if Path(args.output).is_file() else ""
    with output.open_output(args.output, protected=protected) as stream:
        stream.write(page)
    say(f"wrote {args.output}: {overview.rows} abstracts{replaced}")
    say(project.which_model(model))
    return 0


def _train(args: argparse.Namespace) -> int:
    from .evaluate import format_comparison
    from .training import trained_said

    project = _project(args)
    project.check_writable()
    training_set, pile = project.recipe(args.unlabelled)
    texts = [] if args.data else [a.document for a in reading.read_abstracts(args.abstracts)]
    with feedback.stages():
        done = project.retrain(texts, unlabelled=pile, search=args.search, training_set=training_set)
    model = done.model
    say(f"{trained_said(model.card, training_set.no_area)}; saved to {args.model}")
    if args.data and training_set.use_descriptions:
        say(f"note: {args.data}'s areas are those of {args.labels}/: learnt with their descriptions too")
    _say_if_reused(model.card.settings_selection)
    if args.unlabelled and model.card.unlabelled is None:
        why = "every one is labelled" if pile else "it holds no abstracts"
        say(f"note: no unlabelled abstract in --unlabelled ({why}): no self-training")
    if model.card.unlabelled is not None:
        pile_record = model.card.unlabelled
        say(
            f"learnt from {pile_record.pile_abstracts} unlabelled abstracts: {pile_record.pseudo_labelled} "
            f"pseudo-labelled in {pile_record.rounds} round(s) (never written to the labels)",
        )
    if done.previous is not None:
        say(format_comparison(done.comparison))
    if (added := done.new_labels) is not None:
        say(
            f"on the {added.labelled} label(s) new since the previous model: it tagged "
            f"{added.previous_right} ({added.previous_right / added.labelled:.0%}) right; the new model, "
            f"cross-validated, {added.accuracy:.0%}",
        )
    return 0


def _say_if_reused(chosen) -> None:
    """Say so when the settings were kept from the model being replaced."""
    if chosen is not None and chosen.reused:
        say("kept the settings the previous model chose; --search chooses anew")


def _evaluate(args: argparse.Namespace) -> int:
    from .evaluate import format_json, format_report, require_matplotlib, write_plots
    from .training import validate

    if args.plots:
        require_matplotlib()  # before minutes of work, not after
    if args.model is not None:
        with feedback.stages():
            evaluation, review, confidence, correct = _test_model(args)
    else:
        project = _project(args)
        training_set, pile = project.recipe(args.unlabelled)
        run = project.run(project.replaced(training_set), search=args.search)
        with feedback.stages():
            _, validation, _ = validate(training_set, unlabelled=pile, run=run)
        _say_if_reused(validation.selection)
        evaluation, review = validation.evaluation, validation.review
        confidence, correct = validation.confidence, validation.correct
    print(format_json(evaluation, review) if args.format == "json" else format_report(evaluation, review))
    if args.plots:
        for path in write_plots(evaluation, confidence, correct, args.plots):
            say(f"wrote {path}")
    return 0


def _test_model(args: argparse.Namespace):
    """evaluate --model DIR --data FILE: the saved model on labelled abstracts."""
    from .evaluate import test_model
    from .model import load_model

    if not args.data:
        raise UsageError(
            "--model needs --data: the labelled abstracts to test it on",
            fix="Give a labelled .csv/.jsonl it was not trained on "
            "(without --model, evaluate cross-validates).",
        )
    model = load_model(args.model)
    test = _project(args).training_set()
    seen = model.card.training_data.labels
    trained_on = sum(text_id in seen for text_id in test.ids)
    if trained_on:
        say(
            f"note: the model was trained on {trained_on} of these {len(test.texts)} labelled abstracts: "
            "its figures on them are not held out",
        )
    return test_model(model, test.texts, test.labels, test.ids, args.data, f"the model in {args.model}")


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A :class:`~tagger.errors.TaggerWarning` as one line on stderr; others as Python shows them."""
    from .errors import TaggerWarning

    if issubclass(category, TaggerWarning):
        say(f"tagger: warning: {message}")
    else:
        say(warnings.formatwarning(message, category, filename, lineno, line).rstrip("\n"))


def _command(name: str):
    """The function that runs the command ``name``."""
    return {
        "predict": _predict,
        "explain": _explain,
        "suggest": _suggest,
        "label": _label,
        "report": _report,
        "train": _train,
        "evaluate": _evaluate,
        "init": _init,
        "labels": _labels,
    }[name]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 usage error, 2 bad input,
    3 records skipped with --skip-bad, 70 internal error, 130 interrupted)."""
    try:
        parser = arguments.parser()
        if "_ARGCOMPLETE" in os.environ:  # shell completion: the completion extra
            with contextlib.suppress(ImportError):
                import argcomplete

                argcomplete.autocomplete(parser)
        args = parser.parse_args(argv)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _command(args.command)(args)
    except TaggerError as error:
        say(f"tagger: {error}")
        return error.exit_status
    except KeyboardInterrupt:
        say("tagger: interrupted")
        return 130
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except MemoryError:
        say(
            "tagger: out of memory. Tag the file in parts (or with fewer --jobs), or on a machine with more "
            "memory; CSV and JSON lines are read a record at a time.",
        )
        return 2
    except OSError as error:  # disk full, permission denied, ...
        where = f"{error.filename}: " if error.filename else ""
        fix = OS_FIXES.get(error.errno or 0, "")
        say(f"tagger: {where}{error.strerror or error}{'. ' + fix if fix else ''}")
        return 2
    except Exception as error:  # a bug: one line for the user, the traceback on request
        if os.environ.get("TAGGER_DEBUG"):
            raise
        say(
            f"tagger: internal error ({type(error).__name__}: {error}). "
            "Please report it with the command you ran; TAGGER_DEBUG=1 shows the traceback.",
        )
        return 70
