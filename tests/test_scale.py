"""Tagging at any size: streaming, several processes, a progress bar, a Dask cluster."""

import dataclasses
import io
import itertools
import json
import multiprocessing
import os
import pickle
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import SEED_FILES, run, tag_abstracts, with_card

from tagger import batch, feedback, workers
from tagger.batch import CHUNK_SIZE, tag_blocks
from tagger.cli import main
from tagger.reading import Abstract, read_abstracts

SENTENCES = [s for a in read_abstracts(SEED_FILES) for s in a.text.split(". ")]


def pile(folder, n, name="pile.jsonl"):
    rng = random.Random(n)
    path = folder / name
    with open(path, "w", encoding="utf-8") as stream:
        for i in range(n):
            stream.write(json.dumps({"id": f"p{i}", "abstract": ". ".join(rng.sample(SENTENCES, 5))}) + "\n")
    return path


@pytest.fixture(scope="module")
def big_pile(tmp_path_factory):
    return pile(tmp_path_factory.mktemp("pile"), 3 * CHUNK_SIZE + 123)


@pytest.fixture(params=["fork", "spawn"])
def start_method(request, monkeypatch):
    """Workers forked, then spawned, whatever other tests left running (a Dask cluster's
    threads would otherwise make every run here spawn)."""
    monkeypatch.setattr(batch, "can_fork", lambda: request.param == "fork")
    return request.param


def test_output_is_byte_identical_for_any_number_of_processes(
    capsys, big_pile, tmp_path, start_method, seed_model_folder
):
    outputs = []
    for jobs in (1, 2, 3):
        status, _, err = run(
            capsys, "predict", big_pile, "--jobs", jobs, "--output", tmp_path / f"{jobs}.csv",
            "--model", seed_model_folder,
        )  # fmt: skip
        assert status == 0, err
        outputs.append((tmp_path / f"{jobs}.csv").read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
    assert outputs[0].count(b"\n") == 3 * CHUNK_SIZE + 123 + 1


def test_the_api_tags_in_parallel_with_a_model_in_memory(seed_model, big_pile, start_method):
    abstracts = list(read_abstracts([big_pile]))
    model = pickle.loads(pickle.dumps(seed_model))  # in memory only: no folder to load from
    parallel = list(tag_abstracts(abstracts, model, jobs=2))
    serial = list(tag_abstracts(abstracts, seed_model, jobs=1))
    assert [a.id for a, _ in parallel] == [a.id for a in abstracts]
    assert [p for _, p in parallel] == [p for _, p in serial]
    # Another model in the same process gets workers of its own, not the last model's.
    hotter = with_card(model, calibration=dataclasses.replace(model.card.calibration, temperature=1.0))
    expected = [p for _, p in tag_abstracts(abstracts, hotter, jobs=1)]
    assert expected != [p for _, p in serial]
    assert [p for _, p in tag_abstracts(abstracts, hotter, jobs=2)] == expected


def test_workers_are_forked_from_the_main_thread_and_spawned_beside_other_threads(
    seed_model, big_pile, monkeypatch
):
    """Forking beside a running thread could copy a lock it holds: from a second thread the
    workers are spawned instead. Either way, the same tags, and no worker left running."""
    abstracts = list(read_abstracts([big_pile]))
    serial = [p for _, p in tag_abstracts(abstracts, seed_model, jobs=1)]
    started: list[str] = []
    original = workers.Pool.__init__

    def start(pool, *args, **options):
        original(pool, *args, **options)
        started.append(pool.method)

    monkeypatch.setattr(workers.Pool, "__init__", start)
    here_forks = batch.can_fork()  # Linux, and no other thread running (Dask's tests leave some)
    before = set(multiprocessing.active_children())  # (a Dask cluster of another test's, say)
    here = [p for _, p in tag_abstracts(abstracts, seed_model, jobs=2)]
    in_thread: list = []
    thread = threading.Thread(
        target=lambda: in_thread.extend(p for _, p in tag_abstracts(abstracts, seed_model, jobs=2))
    )
    thread.start()
    thread.join()
    assert here == in_thread == serial
    assert started == ["fork" if here_forks else workers._START_METHOD, workers._START_METHOD]
    assert set(multiprocessing.active_children()) <= before  # each pool stopped its workers


def test_forked_workers_never_write_what_was_printed_before_again(big_pile, seed_model_folder):
    """A forked worker inherits stdout's buffer; it is flushed before the fork, or the worker
    would write it a second time when it exits. (A new interpreter runs no other thread: on
    Linux its workers are forked.)"""
    script = (
        "import sys; from tagger.batch import tag_blocks, can_fork;"
        "from tagger.reading import read_abstracts; from tagger import load_model;"
        "print('printed before', can_fork(), end='');"
        "n = sum(len(c) for c, _ in tag_blocks(read_abstracts([sys.argv[1]]), load_model(sys.argv[2]), jobs=2));"
        "print('', n)"
    )
    command = [sys.executable, "-c", script, str(big_pile), str(seed_model_folder)]
    done = subprocess.run(command, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    forks = sys.platform.startswith("linux")
    assert done.stdout == f"printed before {forks} {3 * CHUNK_SIZE + 123}\n".encode()


@pytest.mark.slow  # tags 50,000 abstracts in a subprocess
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads a process's children in /proc")
@pytest.mark.parametrize(
    "signum, status, message",
    [
        (signal.SIGINT, 130, "tagger: interrupted"),  # Ctrl-C
        (signal.SIGTERM, 143, ""),  # kill, timeout, a service manager stopping the job
        (signal.SIGHUP, 129, ""),  # the terminal closed
    ],
)
def test_a_signal_to_the_job_stops_a_run_with_workers_and_leaves_no_process_behind(
    tmp_path, signum, status, message
):
    path = pile(tmp_path, 50_000)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tagger",
            "predict",
            str(path),
            "--jobs",
            "2",
            "-o",
            str(tmp_path / "out.csv"),
        ],
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a terminal's job has
    )
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    while process.poll() is None and not children.read_text().split():
        time.sleep(0.02)  # until a worker runs
    assert process.poll() is None, "the run ended before it could be interrupted"
    os.killpg(process.pid, signum)  # to every process of the job, as a terminal sends Ctrl-C
    _, err = process.communicate(timeout=60)
    assert process.returncode == status, err
    assert err.decode().strip() == message
    assert not (tmp_path / "out.csv").exists()  # the output is written whole or not at all
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)  # any process left in the job?
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail("a worker process outlived the interrupted run")


def test_input_streams_through_in_chunks(shipped):
    endless = (Abstract(str(i), SENTENCES[i % len(SENTENCES)], "gen", i, i) for i in itertools.count())
    chunk, probabilities = next(tag_blocks(endless, shipped, chunk_size=100))
    assert len(chunk) == 100 and probabilities.shape == (100, len(shipped.areas))


def test_a_pickled_model_predicts_the_same(shipped):
    shipped.predict_proba(SENTENCES * 10)  # a large batch: its lookup tables are built
    copy = pickle.loads(pickle.dumps(shipped))
    assert "_Lookup" not in pickle.dumps(shipped).decode("latin-1")  # rebuilt, not sent
    np.testing.assert_array_equal(copy.predict_proba(SENTENCES[:50]), shipped.predict_proba(SENTENCES[:50]))


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_a_progress_bar_on_a_terminal_unless_quiet(
    capsys, big_pile, monkeypatch, tmp_path, seed_model_folder
):

    from tagger.reading import ReadReport

    for quiet, expected in ((False, True), (True, False)):
        terminal = FakeTerminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        report = ReadReport()
        with feedback.progress(
            quiet, [str(big_pile)], report, delay=0.0
        ) as update:  # (predict's: after a second)
            report.bytes_read = big_pile.stat().st_size // 2
            update()
        assert ("B/s" in terminal.getvalue()) is expected, terminal.getvalue()
        args = [
            "predict",
            big_pile,
            "--jobs",
            "1",
            "--output",
            tmp_path / "out.csv",
            "--model",
            seed_model_folder,
        ] + (["--quiet"] if quiet else [])
        assert main([str(a) for a in args]) == 0
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal: no bar
    assert (
        main(
            [
                "predict",
                str(big_pile),
                "--output",
                str(tmp_path / "out.csv"),
                "--model",
                str(seed_model_folder),
            ]
        )
        == 0
    )
    assert "B/s" not in sys.stderr.getvalue()


def test_training_says_each_stage_on_a_terminal(monkeypatch, tmp_path):
    """A train of minutes is not silent on a terminal: a line a stage (2,000 areas were 15
    minutes without a word); nothing when stderr is a file."""
    rows = [
        ("We prove a regret bound for bandits with delayed feedback.", "theory"),
        ("A quadruped robot learns to climb stairs from camera images.", "robotics"),
    ]
    data = tmp_path / "mine.csv"
    texts = [f"{text} Variant {i} of study {i * 7}." for i in range(12) for text, _ in rows]
    labels = [area for _ in range(12) for _, area in rows]
    data.write_text("abstract,area\n" + "".join(f'"{t}",{a}\n' for t, a in zip(texts, labels)))
    for terminal, expected in ((FakeTerminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", terminal)
        assert main(["train", "--data", str(data), "--model", str(tmp_path / "m")]) == 0
        said = terminal.getvalue()
        stages = ("cross-validating settings on 24 labelled abstracts of 2 areas", "fitting the model on 24")
        assert all(stage in said for stage in stages) is expected, said
        assert "trained on 24 labelled abstracts" in said


@pytest.mark.slow  # starts worker processes beside threads (3-5 s): in the slow run
def test_report_testing_and_suggesting_say_each_stage_on_a_terminal(
    monkeypatch, tmp_path, big_pile, seed_model_folder
):
    """report (a tags file of millions of rows), evaluate --model (a large test file) and
    suggest (a large pile) say what they are doing on a terminal, as train does; nothing when
    stderr is a file."""
    model = str(seed_model_folder)
    tags, test = tmp_path / "tags.csv", tmp_path / "test.csv"
    assert main(["predict", str(big_pile), "--quiet", "--output", str(tags), "--model", model]) == 0
    test.write_text("abstract,area\nRobots grasp cups.,robotics\nWe prove a regret bound.,theory\n")
    for terminal, expected in ((FakeTerminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", terminal)
        assert main(["report", str(tags), "-o", str(tmp_path / "r.html")]) == 0
        said = terminal.getvalue()
        assert (f"s] read {sum(1 for _ in tags.open()) - 1:,} rows of {tags}" in said) is expected, said
        assert ("s] writing the report" in said) is expected, said
        status = main(["evaluate", "--model", model, "--data", str(test)])
        said = terminal.getvalue()
        assert status == 0 and ("s] testing the model on 2 labelled abstracts" in said) is expected, said
        status = main(["suggest", str(big_pile), "--n", "3", "--model", model])
        said = terminal.getvalue()
        rows = sum(1 for _ in tags.open()) - 1
        assert status == 0 and (f"s] scored {rows:,} abstracts; choosing 3 among" in said) is expected, said


def test_jobs_must_be_positive(capsys, big_pile):
    status, _, err = run(capsys, "predict", big_pile, "--jobs", "-2")
    assert status == 1 and err.startswith("tagger: --jobs '-2' is not valid")


# -- Dask ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(  # on loopback only, the dashboard on a free port (8787 may be taken)
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def csv_rows(text):
    import csv

    return [dict(row) for row in csv.DictReader(io.StringIO(text))]


def test_dask_rows_equal_the_command_line_rows(client, capsys, tmp_path, seed_model_folder):
    from tagger import cluster

    first, second = pile(tmp_path, 300, "a.jsonl"), pile(tmp_path, 200, "b.jsonl")
    model = seed_model_folder
    status, out, _ = run(
        capsys, "predict", first, second, "--jobs", "1", "--format", "jsonl", "--model", model
    )
    assert status == 0
    expected = [json.loads(line) for line in out.splitlines()]
    rows = cluster.tag_files([first, second], model).compute()
    assert len(rows) == 500
    assert rows == expected


def test_dask_bag_and_dataframe_of_texts(client, seed_model):
    import dask.bag
    import dask.dataframe
    import pandas as pd

    from tagger import cluster

    texts = SENTENCES[:60]
    expected = seed_model.predict(texts)
    rows = cluster.tag_bag(dask.bag.from_sequence(texts, npartitions=4), seed_model).compute()
    assert [r["area"] for r in rows] == [p.area for p in expected]
    assert [r["confidence"] for r in rows] == [round(p.confidence, 4) for p in expected]
    frame = dask.dataframe.from_pandas(pd.DataFrame({"abstract": texts, "n": range(60)}), npartitions=3)
    tagged = cluster.tag_dataframe(frame, model=seed_model).compute()
    assert list(tagged.columns) == [
        "abstract",
        "n",
        "id",
        "area",
        "confidence",
        "runner_up",
        "runner_up_confidence",
        "needs_review",
        "tags",
    ]
    assert tagged["area"].tolist() == [p.area for p in expected]
    assert tagged["tags"].tolist() == [p.tags for p in expected]
    assert tagged["needs_review"].tolist() == [p.needs_review for p in expected]


def _start_with_workers(tmp_path, *extra, **popen):
    """``tagger predict`` of 50,000 abstracts on three processes, in a job of its own, once
    its workers run: (process, worker pids)."""
    path = pile(tmp_path, 50_000)
    process = subprocess.Popen(
        [sys.executable, "-m", "tagger", "predict", str(path), "--jobs", "3", "--quiet", *extra],
        start_new_session=True,
        **popen,
    )
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    while process.poll() is None and len(children.read_text().split()) < 2:
        time.sleep(0.02)
    workers = [int(pid) for pid in children.read_text().split()]
    assert process.poll() is None and len(workers) == 2, "the run ended before its workers ran"
    time.sleep(0.5)  # the workers are tagging
    return process, workers


def _gone(pid: int) -> bool:
    """Whether a process has ended (a zombie waiting for its new parent counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] in "ZX"
    except (FileNotFoundError, ProcessLookupError):
        return True


@pytest.mark.slow  # tags 50,000 abstracts in a subprocess
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads a process's children in /proc")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_worker_killed_ends_the_run_at_once_with_one_clear_error(tmp_path, signum):
    process, workers = _start_with_workers(tmp_path, "-o", str(tmp_path / "out.csv"), stderr=subprocess.PIPE)
    os.kill(workers[0], signum)
    started = time.monotonic()
    try:
        _, err = process.communicate(timeout=5)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert time.monotonic() - started < 5
    assert process.returncode == 2
    assert err.decode() == (
        "tagger: a tagging worker process stopped before it finished. "
        "Run again; --jobs 1 tags in this process alone.\n"
    )
    assert not (tmp_path / "out.csv").exists()
    assert all(_gone(pid) for pid in workers)


@pytest.mark.slow  # tags 50,000 abstracts in a subprocess
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads a process's children in /proc")
def test_workers_die_with_their_parent_and_let_the_pipe_close(tmp_path):
    process, workers = _start_with_workers(tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    os.kill(process.pid, signal.SIGKILL)
    ended = threading.Event()

    def drain():  # as `| wc -l` reads: until every writer of the pipe has gone
        process.stdout.read()
        ended.set()

    threading.Thread(target=drain, daemon=True).start()
    closed = ended.wait(5)
    deadline = time.monotonic() + 5
    while not all(_gone(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in workers if not _gone(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    process.wait()
    assert closed and not left


@pytest.mark.slow  # a minute: five folds and a fit of 1,000 areas
def test_a_taxonomy_of_a_thousand_areas_trains_with_its_weights_bounded():
    """One weight per area and feature, and the fit holds some twenty-five copies of them:
    2,000 areas with every word and word pair of 40,000 abstracts never ended (6.7 GB after
    15 minutes). The vocabulary is cut to the most frequent COEFFICIENTS_MAX // areas
    features; the areas are still told apart by their own words."""
    import random

    import tagger
    from tagger.fitting import COEFFICIENTS_MAX

    rng = random.Random(0)
    common = [f"common{i}" for i in range(300)]
    areas = [f"area{k:04d}" for k in range(1_000)]
    own = {area: [f"w{k}x{j}" for j in range(14)] for k, area in enumerate(areas)}  # 14,000 words
    texts, labels = [], []
    for area in areas:
        for _ in range(3):
            words = rng.sample(own[area], 8) + rng.sample(common, 12)
            rng.shuffle(words)
            texts.append(" ".join(words))
            labels.append(area)
    settings = tagger.TrainingSettings(ngram_max=1, abstract_weight=1.0)
    model = tagger.train(texts, labels, settings=settings)
    assert len(model.areas) == 1_000
    assert model.card.n_features * len(model.areas) <= COEFFICIENTS_MAX
    [seen] = tagger.predict([" ".join(own["area0007"][:6])], model=model)
    assert seen.area == "area0007"


def _refuse(payload, task):
    from tagger.errors import LabelError

    if task == 1:
        raise LabelError("too few labelled texts have a word to learn from", where="mine.csv")
    if task == 2:
        raise MemoryError("Unable to allocate 31.9 GiB for an array")
    return payload + task


@pytest.mark.slow  # over 5 s on 2 shared cores: in the slow run, with the other long tests
def test_a_training_worker_says_what_went_wrong_as_training():
    """A fold's error the user can fix comes out as that error (not "a tagging worker
    failed: LabelError: ..."), and a worker out of memory says so and what to do."""
    from tagger.errors import LabelError, WorkerError
    from tagger.workers import run_all

    assert run_all(_refuse, 10, [0, 3], jobs=2) == [10, 13]
    with pytest.raises(LabelError, match=r"^mine\.csv: too few labelled texts"):
        run_all(_refuse, 10, [0, 1], jobs=2)
    with pytest.raises(WorkerError) as error:
        run_all(_refuse, 10, [0, 2], jobs=2)
    assert "a training worker process ran out of memory (Unable to allocate 31.9 GiB" in str(error.value)
    assert "--jobs" not in str(error.value) and "tagging" not in str(error.value)


def _pid_after(payload, seconds):
    import os
    import time

    time.sleep(seconds)
    return os.getpid()


@pytest.mark.slow  # starts worker processes beside threads (3-5 s): in the slow run
def test_a_slow_task_does_not_hold_up_the_tasks_behind_it():
    """Training's tasks are of unequal cost (a chain of word-pair fits, a single-word fit):
    each worker gets the next task when it answers, so while one works on a slow task the
    other takes every quick one; answers come in task order, and this process's own work
    (the final fit) runs meanwhile."""
    import os

    from tagger.workers import run_all

    here: list[int] = []
    pids = run_all(
        _pid_after,
        None,
        [1.5, 0.01, 0.01, 0.01, 0.01, 0.01],
        jobs=2,
        meanwhile=lambda: here.append(os.getpid()),
    )
    assert here == [os.getpid()] and os.getpid() not in pids
    assert len(set(pids[1:])) == 1 and pids[0] != pids[1]  # the quick ones never waited behind the slow one


@pytest.mark.slow  # starts worker processes beside threads (3-5 s): in the slow run
def test_workers_started_beside_other_threads_come_from_a_fork_server():
    """From a thread (the labelling page's retrain) workers cannot be forked safely: a fork
    server, started clean and warmed with training's imports when the page starts, forks
    them in milliseconds instead of spawning interpreters that import scikit-learn."""

    from tagger import workers

    workers.warm_up(["tagger.training"])
    methods: list[str] = []
    original = workers.Pool.__init__

    def start(pool, *args, **options):
        original(pool, *args, **options)
        methods.append(pool.method)

    answers: list = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(workers.Pool, "__init__", start)
        thread = threading.Thread(
            target=lambda: answers.extend(workers.run_all(_pid_after, None, [0, 0], jobs=2))
        )
        thread.start()
        thread.join()
    assert len(answers) == 2
    expected = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    assert methods == [expected]


def _records(n, extra=lambda i: {}):
    text = "We train a quadruped robot to climb stairs from proprioception and a depth camera. " * 20
    return [{"id": f"r{i}", "abstract": f"{text} Record {i}.", **extra(i)} for i in range(n)]


def test_kept_columns_are_the_same_whatever_the_number_of_processes(capsys, tmp_path, seed_model_folder):
    """--keep all into CSV: the columns are those of the first rows, the same for every
    --jobs (a field first seen at record 150 was a column with --jobs 1 and not with 2)."""
    pile = tmp_path / "pile.jsonl"

    def later(i):
        return (
            {"venue": "X"} | ({"doi": f"10.1/{i}"} if i >= 150 else {}) | ({"year": 2024} if i >= 60 else {})
        )

    pile.write_text("".join(json.dumps(r) + "\n" for r in _records(2000, later)))
    outputs, notes = [], []
    for jobs in (1, 2):
        status, _, err = run(
            capsys, "predict", pile, "--keep", "all", "--jobs", jobs, "-o", tmp_path / f"{jobs}.csv",
            "--model", seed_model_folder,
        )  # fmt: skip
        assert status == 0, err
        outputs.append((tmp_path / f"{jobs}.csv").read_bytes())
        notes.append([line for line in err.splitlines() if line.startswith("note:")])
    assert outputs[0] == outputs[1] and notes[0] == notes[1]
    assert outputs[0].split(b"\n", 1)[0].endswith(b",venue,year")
    assert any("(doi)" in note for note in notes[0]), notes


def test_rows_before_a_bad_record_are_the_same_whatever_the_number_of_processes(
    capsys, tmp_path, seed_model_folder
):
    """Every row before a bad record is written, then the error: on stdout, with --jobs 1 as
    with --jobs 2 (0 rows and 759 before)."""
    pile = tmp_path / "pile.jsonl"
    lines = [json.dumps(r) for r in _records(1000)]
    lines[906] = '{"id": "broken", "abstract": '
    pile.write_text("\n".join(lines) + "\n")
    assert pile.stat().st_size > 1_500_000
    said = []
    for jobs in (1, 2):
        status, out, err = run(
            capsys, "predict", pile, "--jobs", jobs, "--format", "jsonl", "--model", seed_model_folder
        )
        said.append((status, [json.loads(line)["id"] for line in out.splitlines()], err))
    assert said[0] == said[1]
    status, ids, err = said[0]
    assert status == 2 and ids == [f"r{i}" for i in range(906)] and f"{pile}:907: " in err


def test_many_empty_files_hold_no_descriptor_each(tmp_path):
    """1,100 empty .jsonl files under --jobs 2 and a limit of 1,024 open files: each held a
    descriptor until garbage collection, and 'Too many open files' was called damage: each file
    is closed once read."""
    import resource
    import subprocess
    import sys

    folder = tmp_path / "pile"
    folder.mkdir()
    for i in range(600):
        (folder / f"e{i:04d}.jsonl").write_text("")
    (folder / "zz.jsonl").write_text('{"id": "r1", "abstract": "We train legged robots to climb stairs."}\n')

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (512, 512))

    done = subprocess.run(
        [sys.executable, "-c", "from tagger.entry import run; run()", "predict", str(folder), "--jobs", "2"],
        capture_output=True, text=True, preexec_fn=limit, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-800:]
    assert [line.split(",")[2] for line in done.stdout.splitlines()[1:]] == ["r1"]
    assert "damaged" not in done.stderr and "Too many open files" not in done.stderr
