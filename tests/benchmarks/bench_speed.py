"""Speed benchmark: tagger against a plain scikit-learn pipeline, side by side, in one run.

Usage:
    python tests/benchmarks/bench_speed.py [--n 100000] [--stream 1000000] [--train 1000,10000,100000]
                                           [--repeats 3] [--work DIR]
                                           [--abstracts DEV.jsonl [--mapping FILE] [--full-search]
                                           [--no-training]] [--project]

The plain pipeline is what a user would otherwise write: ``TfidfVectorizer()`` +
``LogisticRegression()`` fitted on the same labelled abstracts (labels/ and seeds/), saved
with joblib, and a script that reads the same JSON-lines file in chunks, calls
``predict_proba`` and writes one CSV row per abstract. Corpora are built from the seed
abstracts (sentences shuffled into new abstracts), so nothing is downloaded; with ``--abstracts`` (the development abstracts), the
batch corpus is real abstracts instead (repeated to ``--n``) and training is also timed on
the real labelled abstracts (see 6). Times are
medians over ``--repeats`` runs (this machine is shared: compare the ratios), each figure
next to the plain pipeline's.

1. batch throughput of ``tagger predict FILE --output OUT`` on ``--n`` abstracts, end to end
   and without start-up (the wall time less that of the same command on one abstract); also
   against the plain pipeline with uni+bigrams (tagger's kind of features), and tagger on
   one process; and the main process's own reading of the file;
2. cold start: ``tagger predict`` on one abstract in a new process, against a new process
   that only imports scikit-learn's text and linear-model modules;
3. warm latency of ``predict(text)`` for one abstract, median and 99th percentile;
4. peak memory (RSS of the process and its workers) while streaming ``--stream`` abstracts
   from a file to a file;
5. training time at each of ``--train`` labelled abstracts (``tagger.train`` with its
   settings search, against one ``fit`` of the plain pipeline);
6. with ``--abstracts``: training on the real labelled abstracts, once with each of two
   taxonomies (our mapping's areas, and the conferences' own categories), against one plain
   fit; with ``--full-search``, also the search training used to run (the 40 candidates of
   WIDE_GRID, every one cross-validated in full), to check that the smaller grid of
   ``tagger train --search`` reaches the same cross-validated macro-F1 (within 0.01);
7. with ``--abstracts``: the labelling loop's retrain, as ``tagger train --unlabelled PILE
   --model DIR`` runs it after a user labelled 20 more abstracts: a model trained on all but
   the last 20 labelled abstracts (of areas with three or more) is replaced by one trained on all of them, learning from
   the pile (every development abstract) by self-training and keeping the previous model's
   searched settings; once on our areas, once on the first 1,000 abstracts' conference
   categories.

8. with ``--project``: ``tagger train --search`` on the repository's labels against one plain
   fit of the same texts, ``tagger train`` keeping the settings, and the labelling page's
   retrain (from a thread, beside another), interleaved.

The batch commands (tagger on all cores and on one, the plain script, fastText's Python
module when installed: ``pip install fasttext-wheel``, and fastText's command-line tool when
installed: ``apt-get install fasttext``, ``predict-prob`` over the same abstracts one a line)
run in turn, round after round, and each figure is the median of its rounds. The last
lines check the targets: batch >= 4x the plain script and >= 2.5x on one process, cold start
<= 0.15 of the scikit-learn import, training on
the real labelled abstracts <= 10x a plain fit, the labelling loop's retrain <= 10 s, on the
project's labels ``train --search`` <= 15 s and <= 25 plain fits, the page's retrain <= 5 s.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))  # devdata, beside this file
PLAIN_SCRIPT = """
import csv, itertools, json, sys, joblib
pipeline = joblib.load(sys.argv[1])
classes = list(pipeline.classes_)
with open(sys.argv[2], encoding="utf-8") as lines, open(sys.argv[3], "w", newline="") as out:
    writer = csv.writer(out)
    writer.writerow(["area", "confidence"])
    while chunk := list(itertools.islice(lines, 2000)):
        probabilities = pipeline.predict_proba([json.loads(line)["abstract"] for line in chunk])
        for row in probabilities:
            best = row.argmax()
            writer.writerow([classes[best], round(float(row[best]), 4)])
"""


# fastText's Python module (the fasttext-wheel package), trained on the same labelled abstracts
# with the settings its tutorial suggests for text classification, read and written like the
# plain script. Its own predict() fails under numpy 2 (np.array(..., copy=False)): the script
# calls the binding under it, as predict() does.
FASTTEXT_SCRIPT = """
import csv, itertools, json, sys, fasttext
model = fasttext.load_model(sys.argv[1])
with open(sys.argv[2], encoding="utf-8") as lines, open(sys.argv[3], "w", newline="") as out:
    writer = csv.writer(out)
    writer.writerow(["area", "confidence"])
    while chunk := list(itertools.islice(lines, 2000)):
        texts = [" ".join(json.loads(line)["abstract"].split()) for line in chunk]
        labels, probabilities = model.f.multilinePredict(texts, 1, 0.0, "strict")
        for label, probability in zip(labels, probabilities):
            writer.writerow([label[0].removeprefix("__label__"), round(float(probability[0]), 4)])
"""


def fasttext_training_file(folder: Path) -> Path:
    """The repository's labelled abstracts as fastText reads them: ``__label__AREA text``."""
    from tagger.labels import load_training_set

    training_set = load_training_set(ROOT / "labels", [ROOT / "seeds"])
    data = folder / "fasttext-train.txt"
    with open(data, "w", encoding="utf-8") as stream:
        for text, area in zip(training_set.texts, training_set.labels):
            stream.write(f"__label__{area} {' '.join(text.split())}\n")
    return data


def fasttext_model(folder: Path) -> Path | None:
    """fastText trained on the repository's labelled abstracts (None when not installed)."""
    try:
        import fasttext
    except ImportError:
        return None
    data = fasttext_training_file(folder)
    model = fasttext.train_supervised(str(data), epoch=25, wordNgrams=2, verbose=0)
    path = folder / "fasttext.bin"
    model.save_model(str(path))
    return path


def fasttext_cli(folder: Path, corpus: Path) -> list[str] | None:
    """The command that tags ``corpus`` with fastText's command-line tool (Debian's
    ``fasttext``: ``apt-get install fasttext``), trained on the repository's labelled abstracts
    as :func:`fasttext_model` trains its module, reading the same abstracts one a line (fastText
    reads no JSON: the file is written once, before the timing) and writing the top area and
    its probability to a file; None when the tool is not installed."""
    tool = shutil.which("fasttext")
    if tool is None:
        return None
    data = fasttext_training_file(folder)
    model = folder / "fasttext-cli"
    subprocess.run(
        [tool, "supervised", "-input", str(data), "-output", str(model), "-epoch", "25", "-wordNgrams", "2",
         "-verbose", "0"],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    texts = folder / f"{corpus.stem}.txt"
    with open(corpus, encoding="utf-8") as lines, open(texts, "w", encoding="utf-8") as out:
        out.writelines(" ".join(json.loads(line)["abstract"].split()) + "\n" for line in lines)
    out_file = folder / "ft-cli.txt"
    return [
        "sh",
        "-c",
        '"$0" predict-prob "$1" "$2" 1 > "$3"',
        tool,
        f"{model}.bin",
        str(texts),
        str(out_file),
    ]


def interleaved(commands: dict[str, list[str]], repeats: int) -> dict[str, float]:
    """The median wall time of each command, the commands run in turn, ``repeats`` rounds."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def seed_sentences() -> dict[str, list[str]]:
    """Sentences of the seed abstracts, by the area of their hand label."""
    from tagger.labels import load_training_set

    training_set = load_training_set(ROOT / "labels", [ROOT / "seeds"])
    sentences: dict[str, list[str]] = {}
    for text, area in zip(training_set.texts, training_set.labels):
        sentences.setdefault(area, []).extend(s.strip() for s in text.split(". ") if s.strip())
    return sentences


def write_corpus(path: Path, n: int, labelled: bool = False) -> Path:
    """``n`` abstracts of eight shuffled seed sentences each (of one area when ``labelled``)."""
    rng = random.Random(n)
    by_area = seed_sentences()
    areas = sorted(by_area)
    everything = [s for area in areas for s in by_area[area]]
    with open(path, "w", encoding="utf-8") as stream:
        for _ in range(n):
            area = rng.choice(areas)
            pool = by_area[area] if labelled else everything
            record = {"abstract": ". ".join(rng.choices(pool, k=8)) + "."}
            if labelled:
                record["area"] = area
            stream.write(json.dumps(record) + "\n")
    return path


def write_real_corpus(path: Path, n: int, abstracts: Path) -> Path:
    """``n`` real abstracts: those of ``abstracts`` (JSON lines, gzip-compressed too) in a
    shuffled order, each once, then again in another order while more are needed."""
    opener = gzip.open if abstracts.suffix == ".gz" else open
    with opener(abstracts, "rt", encoding="utf-8") as stream:
        rows = [json.loads(line)["abstract"] for line in stream if line.strip()]
    rng = random.Random(n)
    with open(path, "w", encoding="utf-8") as out:
        written = 0
        while written < n:
            order = rng.sample(rows, len(rows))[: n - written]
            out.writelines(json.dumps({"abstract": text}) + "\n" for text in order)
            written += len(order)
    return path


def write_labelled(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", encoding="utf-8") as stream:
        for row in rows:
            record = {"title": row["title"], "abstract": row["abstract"], "area": row["area"]}
            stream.write(json.dumps(record) + "\n")
    return path


def timed(command: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_rss(command: list[str]) -> float:
    """Peak of the summed resident memory (MB) of a process and its descendants, sampled."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while process.poll() is None:
        peak = max(peak, sum(_rss(pid) for pid in _tree(process.pid)))
        time.sleep(0.05)
    if process.returncode:
        raise RuntimeError(f"{command} failed")
    return peak / 2**20


def _tree(pid: int) -> list[int]:
    pids, index = [pid], 0
    while index < len(pids):
        try:
            children = Path(f"/proc/{pids[index]}/task/{pids[index]}/children").read_text().split()
        except OSError:
            children = []
        pids += [int(child) for child in children]
        index += 1
    return pids


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def reading_share(corpus: Path, repeats: int) -> float:
    """Seconds (median) this process spends reading ``corpus`` (parsed, cleaned, ids made)."""
    from tagger.reading import read_abstracts

    whole = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in read_abstracts([corpus]):
            pass
        whole.append(time.perf_counter() - start)
    return statistics.median(whole)


def plain_pipeline(folder: Path, ngram_range: tuple[int, int] = (1, 1)) -> Path:
    """The plain pipeline fitted on the repository's labelled abstracts, saved with joblib."""
    import joblib
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from tagger.labels import load_training_set

    training_set = load_training_set(ROOT / "labels", [ROOT / "seeds"])
    pipeline = make_pipeline(TfidfVectorizer(ngram_range=ngram_range), LogisticRegression())
    pipeline.fit(training_set.texts, training_set.labels)
    path = folder / f"plain-{ngram_range[1]}.joblib"
    joblib.dump(pipeline, path)
    return path


def row(name: str, ours: float, plain: float, unit: str, better: str) -> None:
    ratio = plain / ours if better == "lower" else ours / plain
    print(f"  {name:44s} {ours:12.3f} {plain:12.3f}  {unit:12s} {ratio:6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--stream", type=int, default=1_000_000, help="0 to leave out the memory run")
    parser.add_argument("--train", default="1000,10000,100000", help="sizes, or '' to leave out")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, help="folder for the corpora (default: a temporary one)")
    parser.add_argument("--abstracts", type=Path, help="the development abstracts (JSON lines)")
    parser.add_argument("--mapping", type=Path, help="their categories -> areas (default: ours)")
    parser.add_argument("--full-search", action="store_true", help="also the search over the wide grid")
    parser.add_argument("--no-training", action="store_true", help="leave out 6 and 7 (with --abstracts)")
    parser.add_argument(
        "--project", action="store_true", help="8: training on the repository's own labels (labels/, seeds/)"
    )
    args = parser.parse_args()
    checks: list[tuple[str, float, str, float]] = []  # (figure, value, comparison, target)
    # Commands run with their bytecode cached, as an installed package has it (pip compiles
    # it): a machine that sets PYTHONDONTWRITEBYTECODE would time tagger's compiling instead.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

    work = args.work or Path(tempfile.mkdtemp(prefix="tagger-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    tagger = [python, "-m", "tagger", "predict", "--quiet"]
    plain = [python, "-c", PLAIN_SCRIPT, str(plain_pipeline(work))]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"
    )
    print(f"{'':46s}{'tagger':>12s} {'plain':>12s}  {'unit':12s} {'ratio':>7s} (>1: tagger better)")

    if args.abstracts:
        corpus = write_real_corpus(work / f"real-{args.n}.jsonl", args.n, args.abstracts)
    else:
        corpus = write_corpus(work / f"corpus-{args.n}.jsonl", args.n)
    one = write_corpus(work / "one.jsonl", 1)
    megabytes = corpus.stat().st_size / 1e6
    fasttext_path = fasttext_model(work)
    batch = {
        "tagger": [*tagger, str(corpus), "--output", str(work / "out.csv")],
        "plain": [*plain, str(corpus), str(work / "plain.csv")],
        "tagger --jobs 1": [*tagger, str(corpus), "--output", str(work / "out-1.csv"), "--jobs", "1"],
    }
    if fasttext_path is not None:
        batch["fasttext"] = [
            python,
            "-c",
            FASTTEXT_SCRIPT,
            str(fasttext_path),
            str(corpus),
            str(work / "ft.csv"),
        ]
    if (command := fasttext_cli(work, corpus)) is not None:
        batch["fasttext command line"] = command
    timed([*tagger, str(one), "--output", str(work / "one.csv")], 1)  # (its bytecode written)
    medians = interleaved(batch, args.repeats)
    ours_time, plain_time = medians["tagger"], medians["plain"]
    ours_start = timed([*tagger, str(one), "--output", str(work / "one.csv")], args.repeats * 3)
    plain_start = timed([*plain, str(one), str(work / "one-plain.csv")], args.repeats * 3)
    kind = "real" if args.abstracts else "synthetic"
    print(f"1. batch, {args.n:,} {kind} abstracts ({megabytes:.0f} MB)")
    checks.append(("batch, end to end (ratio)", plain_time / ours_time, ">=", 4.0))
    row("end to end (abstracts/s)", args.n / ours_time, args.n / plain_time, "abstracts/s", "higher")
    row("end to end (MB/s)", megabytes / ours_time, megabytes / plain_time, "MB/s", "higher")
    row(
        "without start-up (abstracts/s)",
        args.n / (ours_time - ours_start),
        args.n / (plain_time - plain_start),
        "abstracts/s",
        "higher",
    )
    bigrams = [python, "-c", PLAIN_SCRIPT, str(plain_pipeline(work, (1, 2)))]
    bigram_time = timed([*bigrams, str(corpus), str(work / "plain-2.csv")], args.repeats)
    row(
        "end to end, plain with uni+bigrams like tagger",
        args.n / ours_time,
        args.n / bigram_time,
        "abstracts/s",
        "higher",
    )
    single = medians["tagger --jobs 1"]
    row(
        "end to end, tagger on one process (--jobs 1)",
        args.n / single,
        args.n / plain_time,
        "abstracts/s",
        "higher",
    )
    checks.append(("per core: --jobs 1 against the plain pipeline (ratio)", plain_time / single, ">=", 2.5))
    print(
        f"  the main process's reading of the {megabytes:.0f} MB: {reading_share(corpus, args.repeats):.2f} s "
        "(parsed, cleaned, ids made)"
    )
    for name, what, install in (
        ("fasttext", "fastText's Python module", "pip install fasttext-wheel"),
        ("fasttext command line", "fastText's command-line tool", "apt-get install fasttext"),
    ):
        if name in medians:
            row(f"end to end, {what}", args.n / ours_time, args.n / medians[name], "abstracts/s", "higher")
        else:
            print(f"  ({what} not installed: {install} to measure it beside)")

    imports = [python, "-c", "import sklearn.feature_extraction.text, sklearn.linear_model"]
    print("2. cold start")
    import_time = timed(imports, args.repeats * 3)
    row("new process, one abstract vs sklearn imports", ours_start, import_time, "s", "lower")
    checks.append(("cold start / scikit-learn import", ours_start / import_time, "<=", 0.15))

    print("3. warm latency of one abstract")
    import joblib

    import tagger as library

    model = library.load_model(ROOT / "models")
    pipeline = joblib.load(work / "plain-1.joblib")
    texts = [json.loads(line)["abstract"] for line in corpus.open(encoding="utf-8").readlines()[:2000]]
    ours_latency, plain_latency = [], []
    for text in texts:
        start = time.perf_counter()
        library.predict(text, model=model)
        ours_latency.append(time.perf_counter() - start)
        start = time.perf_counter()
        pipeline.predict_proba([text])
        plain_latency.append(time.perf_counter() - start)
    ours_latency.sort()
    plain_latency.sort()
    row(
        "median (ms)",
        1e3 * statistics.median(ours_latency),
        1e3 * statistics.median(plain_latency),
        "ms",
        "lower",
    )
    p99 = int(0.99 * len(texts))
    row("99th percentile (ms)", 1e3 * ours_latency[p99], 1e3 * plain_latency[p99], "ms", "lower")

    if args.stream:
        big = write_corpus(work / f"corpus-{args.stream}.jsonl", args.stream)
        print(f"4. streaming {args.stream:,} abstracts ({big.stat().st_size / 1e9:.2f} GB) file to file")
        ours_peak = peak_rss([*tagger, str(big), "--output", str(work / "big.csv")])
        plain_peak = peak_rss([*plain, str(big), str(work / "big-plain.csv")])
        row("peak RSS, all processes (MB)", ours_peak, plain_peak, "MB", "lower")

    sizes = [int(size) for size in args.train.split(",") if size]
    if sizes:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        from tagger.labels import read_labelled_file

        print("5. training (tagger: with its settings search and calibration; plain: one fit)")
        for size in sizes:
            path = write_corpus(work / f"labelled-{size}.jsonl", size, labelled=True)
            start = time.perf_counter()
            library.train(path)
            ours = time.perf_counter() - start
            data = read_labelled_file(path)
            start = time.perf_counter()
            make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(data.texts, data.labels)
            row(f"{size:,} labelled abstracts (s)", ours, time.perf_counter() - start, "s", "lower")

    if args.project:
        project_training(args, work, checks)

    if args.abstracts and not args.no_training:
        real_training(args, work, library, checks)
        loop_retrain(args, work, checks)

    print("targets:")
    for name, value, comparison, target in checks:
        met = value >= target if comparison == ">=" else value <= target
        print(f"  {name:60s} {value:6.2f} {comparison} {target:<5} {'met' if met else 'NOT MET'}")


# The settings search's wider grid of before: --full-search runs it to check the smaller
# grid of tagger train --search against it.
WIDE_GRID = {
    "C": (0.3, 1.0, 3.0, 10.0, 30.0),
    "ngram_max": (1, 2),
    "sublinear_tf": (True, False),
    "balance_areas": (True, False),
}


def real_training(args, work: Path, library, checks: list) -> None:
    """6: training on the real labelled abstracts, against one plain fit (and the full search)."""

    import devdata
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from tagger import training
    from tagger.labels import read_labelled_file
    from tagger.plan import PLAN

    mapping = devdata.load_mapping(args.mapping or devdata.MAPPING)
    print("6. training on real labelled abstracts (tagger: search, calibration, final fit; plain: one fit)")
    for name, rows in (
        ("our areas", devdata.load(args.abstracts, mapping, min_count=2)),
        ("conference categories", devdata.load(args.abstracts, None, min_count=2)),
    ):
        path = write_labelled(work / f"labelled-{name.replace(' ', '-')}.jsonl", rows)
        data = read_labelled_file(path)
        ours, plain = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            model = library.train(path)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(list(data.texts), list(data.labels))
            plain.append(time.perf_counter() - start)
        ours_time, plain_time = statistics.median(ours), statistics.median(plain)
        areas = len(set(data.labels))
        row(f"{len(rows):,} abstracts, {areas} {name} (s)", ours_time, plain_time, "s", "lower")
        checks.append((f"training, {name}: tagger / one plain fit", ours_time / plain_time, "<=", 10.0))
        chosen_f1 = _cross_validated_f1(model.card)  # as the search scored it, like the full search
        print(
            f"     chosen settings: {_settings(model.card.settings)}, cross-validated macro-F1 {chosen_f1:.4f}"
        )
        if args.full_search:
            start = time.perf_counter()
            settings, selection, out_of_fold = training.select_settings(data, plan=PLAN.with_grid(WIDE_GRID))
            full_f1 = training._macro_f1(out_of_fold.scores, data.label_indices())
            elapsed = time.perf_counter() - start
            print(
                f"     full search ({elapsed:.0f} s): {_settings(settings)}, cross-validated macro-F1 {full_f1:.4f}"
            )
            for point in selection.grid:
                print(f"       {point}")
            checks.append((f"full search's macro-F1 - chosen's, {name}", full_f1 - chosen_f1, "<=", 0.01))


def project_training(args, work: Path, checks: list) -> None:
    """8: ``tagger train --search`` on the repository's labels (a new process: imports, the
    search, calibration, the final fit, saving), against one plain fit of the same texts;
    ``tagger train`` keeping the settings the search chose; and the labelling page's retrain
    (in a process that runs other threads, as the page's server does), interleaved runs."""
    import shutil
    import threading

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from tagger.corpus import Corpus
    from tagger.labels import load_training_set
    from tagger.workers import warm_up

    training_set = load_training_set(ROOT / "labels", [ROOT / "seeds"])
    folder = work / "project-model"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(ROOT / "models", folder)
    python = sys.executable
    search = [python, "-m", "tagger", "train", "--search", "--model", str(folder)]
    keep = [python, "-m", "tagger", "train", "--model", str(folder)]
    warm_up()  # as the labelling page does when it starts
    server = threading.Event()
    threading.Thread(target=server.wait, daemon=True).start()  # a thread, as the page's server
    searches, plains, keeps, pages = [], [], [], []
    analysed = Corpus()  # the page keeps one for its session: its first retrain analyses the texts
    for _ in range(args.repeats):
        start = time.perf_counter()
        subprocess.run(search, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        searches.append(time.perf_counter() - start)
        start = time.perf_counter()
        make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(
            list(training_set.texts), list(training_set.labels)
        )
        plains.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run(keep, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        keeps.append(time.perf_counter() - start)
        retraining = threading.Thread(target=_timed_retrain, args=(training_set, folder, pages, analysed))
        retraining.start()
        retraining.join()
    server.set()
    search_time, plain_time = statistics.median(searches), statistics.median(plains)
    print(f"8. training on the repository's {len(training_set.labels):,} labels (medians of {args.repeats})")
    row("tagger train --search / one plain fit (s)", search_time, plain_time, "s", "lower")
    print(f"     tagger train keeping the settings: {statistics.median(keeps):.1f} s")
    later = statistics.median(pages[1:]) if len(pages) > 1 else pages[0]
    print(f"     the labelling page's retrain: {later:.1f} s (its first in a session: {pages[0]:.1f} s)")
    checks.append(("tagger train --search on the project's labels (s)", search_time, "<=", 15.0))
    checks.append(("tagger train --search, in plain fits", search_time / plain_time, "<=", 25.0))
    checks.append(("the labelling page's retrain, settings kept (s)", later, "<=", 5.0))


def _timed_retrain(training_set, folder: Path, times: list[float], corpus) -> None:
    """The labelling page's retrain (tagger.retraining.retrain), its time added to ``times``."""
    from tagger.retraining import previous_model, retrain
    from tagger.training import Run

    start = time.perf_counter()
    previous = previous_model(folder)
    retrain(training_set, folder, list(training_set.texts[:200]), run=Run(corpus=corpus), previous=previous)
    times.append(time.perf_counter() - start)


def loop_retrain(args, work: Path, checks: list) -> None:
    """7: the labelling loop's retrain with the pile (see the module's docstring)."""
    import devdata

    from tagger import training
    from tagger.labels import read_labelled_file

    lines = args.abstracts.read_text(encoding="utf-8").splitlines()
    pile = [devdata.document(json.loads(line)) for line in lines if line.strip()]
    first_thousand = devdata.load(args.abstracts, None)[:1000]
    counts = Counter(row["area"] for row in first_thousand)
    print(f"7. the labelling loop's retrain: 20 labels more, a pile of {len(pile):,} abstracts (s)")
    for name, rows in (
        ("our areas", devdata.load(args.abstracts, devdata.load_mapping(args.mapping or devdata.MAPPING), 2)),
        ("conference categories", [row for row in first_thousand if counts[row["area"]] >= 2]),
    ):
        slug = name.replace(" ", "-")
        before = read_labelled_file(write_labelled(work / f"loop-{slug}-before.jsonl", _but_last(rows, 20)))
        after = read_labelled_file(write_labelled(work / f"loop-{slug}-after.jsonl", rows))
        previous = training.train(before, unlabelled=pile)
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            model = training.train(after, unlabelled=pile, run=training.Run(previous=previous.card))
            times.append(time.perf_counter() - start)
        retrain = statistics.median(times)
        areas = len(set(after.labels))
        print(f"  {len(rows):,} labelled abstracts, {areas} {name}: {retrain:.1f} s")
        selection = model.card.settings_selection
        print(f"     settings: {'reused: ' + selection.reused if selection.reused else selection.criterion}")
        print(f"     self-training: {model.card.unlabelled.rounds} round(s)")
        checks.append((f"labelling loop's retrain, {name} (s)", retrain, "<=", 10.0))


def _but_last(rows: list[dict], n: int) -> list[dict]:
    """``rows`` without the last ``n`` whose area keeps two others (every area stays trainable)."""
    counts = Counter(row["area"] for row in rows)
    left_out = set()
    for index in reversed(range(len(rows))):
        if len(left_out) < n and counts[rows[index]["area"]] > 2:
            counts[rows[index]["area"]] -= 1
            left_out.add(index)
    return [row for index, row in enumerate(rows) if index not in left_out]


def _cross_validated_f1(card) -> float:
    """The chosen settings' cross-validated macro-F1 as the search recorded it in the card."""
    chosen = {"C": card.settings.C, "ngram_max": card.settings.ngram_max}
    [row] = [r for r in card.settings_selection.grid if "macro_f1" in r and chosen.items() <= r.items()]
    return row["macro_f1"]


def _settings(settings) -> str:
    return f"C={settings.C}, ngram_max={settings.ngram_max}"


if __name__ == "__main__":
    main()
