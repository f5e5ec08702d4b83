"""The labelling page (tagger label --web) over HTTP, as the page and as other pages would call
it: the token, the Host and Origin checks, answers and undo through the label store, two
sessions at once, retraining, text shown as text. The page in a real browser:
tests/test_browser.py."""

from __future__ import annotations

import contextlib
import csv
import http.client
import io
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import copy_project, keep_labels
from hypothesis import given
from hypothesis import strategies as st

from tagger.features import word_spans
from tagger.web import highlights

PILE = [
    "A quadruped robot learns to climb stairs from proprioception and a depth camera.",
    "We prove a regret bound for contextual bandits with linear rewards and heavy tails.",
    "A diffusion model generates images of anime faces from text prompts in four steps.",
    "Membership inference attacks recover which records trained a language model.",
    "<script>window.pwned = 1; alert('x')</script> We study <b>bold</b> claims about proteins folding.",
]


MARKUP_TITLE = "<img src=x onerror=alert(1)> Folding"


def write_pile(folder: Path, texts=PILE) -> Path:
    path = folder / "pile.jsonl"
    records = [{"id": f"w{i}", "abstract": t} for i, t in enumerate(texts)]
    records[-1]["title"] = MARKUP_TITLE
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


class Page:
    """``tagger label PILE --web`` running in ``folder``: its address, and calls to it (with
    ``people``, started with ``--annotators``: each one's address in ``addresses``, and the
    calls made as the first of them until :meth:`as_` says otherwise)."""

    def __init__(
        self, folder: Path, *args: str, pile: str = "pile.jsonl", people: tuple[str, ...] = ()
    ) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        named = ("--annotators", ",".join(people)) if people else ()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tagger", "label", pile, "--web", *args, *named],
            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        self.addresses = {}
        for name in people or ("",):
            line = self.process.stdout.readline()
            if not line.startswith(f"labelling page{f' for {name}' if name else ''}: "):
                self.process.kill()
                raise AssertionError(f"no address: {line!r} {self.process.stderr.read()}")
            self.addresses[name] = line.split(": ", 1)[1].strip()
        self.as_(next(iter(self.addresses)))

    def as_(self, name: str) -> Page:
        """Make the calls that follow as ``name`` (their token)."""
        self.address = self.addresses[name]
        url = urlsplit(self.address)
        self.host, self.port = url.hostname, url.port
        self.token = url.query.removeprefix("token=")
        return self

    def request(self, method: str, path: str, body=None, headers=None, token=True) -> tuple[int, dict, bytes]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        sent = {"Content-Type": "application/json", **(headers or {})}
        if token:
            sent.setdefault("X-Tagger-Token", self.token)
        connection.request(method, path, body=None if body is None else json.dumps(body), headers=sent)
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response.status, dict(response.getheaders()), data

    def call(self, method: str, path: str, body=None) -> dict:
        status, _, data = self.request(method, path, body)
        assert status == 200, (status, data)
        return json.loads(data)

    def answer(self, area: str | None) -> dict:
        """Answer the abstract the page shows now, naming it as the page does."""
        state = self.call("GET", "/api/state")
        return self.call("POST", "/api/answer", {"area": area, "at": state["item"]["at"]})

    def undo(self) -> dict:
        state = self.call("GET", "/api/state")
        return self.call("POST", "/api/undo", {"at": state["undo_at"]})

    def stop(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGINT)
        return self.ended()

    def ended(self) -> tuple[int, str]:
        """The exit status and what the page said on stderr, once it has exited. (Waiting for
        the end of its pipes would also wait for the fork server it started, which holds them
        until it has finished importing training's modules.)"""
        status = self.process.wait(timeout=30)
        os.set_blocking(self.process.stderr.fileno(), False)
        chunks = []
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.process.stderr.fileno(), 1 << 16):
                chunks.append(chunk)
        for stream in (self.process.stdout, self.process.stderr):
            stream.close()
        return status, b"".join(chunks).decode("utf-8")


@pytest.fixture
def project(tmp_path):
    copy_project(tmp_path, ("labels", "seeds"))
    write_pile(tmp_path)
    return tmp_path


def label_rows(folder: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO((folder / "labels" / "labels.csv").read_text(encoding="utf-8"))))


def test_the_page_answers_only_its_own_requests(project):
    page = Page(project)
    try:
        assert page.host == "127.0.0.1"
        status, headers, body = page.request("GET", f"/?token={page.token}", token=False)
        assert status == 200 and b"<title>tagger" in body
        policy = headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "script-src 'sha256-" in policy and "unsafe" not in policy
        assert headers["X-Content-Type-Options"] == "nosniff" and headers["Referrer-Policy"] == "no-referrer"
        # Without the token, with another, or by another name: refused, and nothing is said.
        for path, token in (("/", False), ("/?token=nope", False), ("/api/state", False), ("/report", False)):
            status, _, body = page.request("GET", path, token=token)
            assert status == 403 and b"abstract" not in body, path
        status, _, _ = page.request("GET", "/api/state", headers={"X-Tagger-Token": "x" * 32})
        assert status == 403
        status, _, _ = page.request("GET", "/api/state", headers={"Host": f"evil.example:{page.port}"})
        assert status == 421
        status, _, _ = page.request(
            "POST", "/api/answer", {"area": "robotics"}, headers={"Origin": "http://evil.example"}
        )
        assert status == 403
        assert page.request("POST", "/api/answer", {"area": "robotics"}, token=False)[0] == 403
        # No path of the machine is served, whatever is asked.
        for path in (
            "/../labels/labels.csv",
            "/labels/labels.csv",
            "/%2e%2e/pile.jsonl",
            "/report/../../pile.jsonl",
        ):
            status, _, body = page.request("GET", f"{path}?token={page.token}", token=False)
            assert status == 404 and b"abstract_id" not in body, path
        assert label_rows(project) == label_rows(project)  # (readable; nothing was answered)
        assert page.request("POST", "/api/answer", {"area": "astrology"})[0] == 409
    finally:
        status, err = page.stop()
    assert status == 0 and "labelled 0, skipped 0" in err and "Traceback" not in err


def test_a_page_served_on_another_address_answers_by_that_address_only(project):
    """``--host 127.0.0.2`` (a second address of this machine): the links name it, the page
    answers requests that name it, and a request naming 127.0.0.1 or localhost (a name that
    resolves here, as a rebinding page's would) is refused; a POST from another origin too."""
    page = Page(project, "--host", "127.0.0.2", people=("ana", "ben", "cy"))
    try:
        assert {urlsplit(a).hostname for a in page.addresses.values()} == {"127.0.0.2"}
        assert len(set(page.addresses.values())) == 3  # a token each
        assert page.call("GET", "/api/state")["annotator"] == "ana"
        for host in (f"127.0.0.1:{page.port}", f"localhost:{page.port}", "127.0.0.2"):
            status, _, _ = page.request("GET", "/api/state", headers={"Host": host})
            assert status == 421, host
        for origin, expected in (
            (f"http://127.0.0.1:{page.port}", 403),
            (f"http://127.0.0.2:{page.port}", 200),
        ):
            state = page.call("GET", "/api/state")
            status, _, _ = page.request(
                "POST", "/api/answer", {"area": None, "at": state["item"]["at"]}, headers={"Origin": origin}
            )
            assert status == expected, origin
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", page.port), timeout=5):
            pass  # not served on 127.0.0.1
    finally:
        status, err = page.stop()
    assert status == 0 and "this machine only" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("host", "said"),
    [
        ("0.0.0.0", "every address of this machine"),
        ("::", "every address of this machine"),
        ("not a host!", "not an address or a host name"),
        ("198.51.100.7", "cannot serve the page on 198.51.100.7"),  # (a documentation address)
    ],
)
def test_an_address_the_page_cannot_be_served_on_is_one_clear_error(project, host, said):
    done = subprocess.run(
        [sys.executable, "-m", "tagger", "label", "pile.jsonl", "--web", "--host", host],
        cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "labelling page" not in done.stdout


def test_host_without_web_is_refused(project):
    done = subprocess.run(
        [sys.executable, "-m", "tagger", "label", "pile.jsonl", "--host", "127.0.0.2"],
        cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and "--host is for the labelling page" in done.stderr


def test_a_page_served_beyond_this_machine_says_so():
    """Served on an address other machines reach, the terminal warns: each link labels as its
    annotator for whoever holds it, over plain http. Loopback addresses are this machine only."""
    from tagger.web import served_at

    assert served_at("127.0.0.2").loopback and served_at("::1").loopback and served_at("localhost").loopback
    lab = served_at("10.1.2.3")
    assert not lab.loopback
    assert lab.names(8765) == {"10.1.2.3:8765"}
    assert served_at("::1").names(8765) == {"[::1]:8765"}
    assert served_at("127.0.0.1").names(80) == {"127.0.0.1:80", "localhost:80"}
    assert "beyond this machine" in lab.reach() and "http" in lab.reach()
    assert served_at("127.0.0.2").reach().startswith("(this machine only")


def test_an_answer_on_the_page_carries_a_flag_and_a_comment_of_text_only(project):
    before = label_rows(project)
    page = Page(project, "--n", "5")
    try:
        at = page.call("GET", "/api/state")["item"]["at"]
        for said, error in (
            ({"comment": ["x"]}, "the comment is list, not text"),
            ({"comment": "x" * 501}, "is 501 characters"),
            ({"comment": "ok \x00"}, "holds '\\x00'"),
            ({"flag": "yes"}, "a flag is True or False, not str"),
        ):
            status, _, data = page.request("POST", "/api/answer", {"area": "robotics", "at": at, **said})
            assert status == 409 and error in json.loads(data)["error"], data
        assert label_rows(project) == before
        body = {"area": "robotics", "at": at, "comment": " Arms,  not legs ", "flag": True}
        state = page.call("POST", "/api/answer", body)
        assert (state["last"]["flagged"], state["last"]["commented"]) == (True, True)
        assert state["keys"]["flag"] == "!"
        assert [(r["area"], r["flag"], r["comment"]) for r in label_rows(project)[-1:]] == [
            ("robotics", "yes", "Arms, not legs")
        ]
    finally:
        page.stop()


@pytest.mark.slow  # starts a page server process or two (2-6 s): in the slow run
def test_the_page_counts_an_abstract_skipped_then_answered_after_an_undo_as_labelled(project):
    page = Page(project, "--n", "5")
    try:
        page.answer("robotics")
        state = page.answer(None)  # a skip
        assert (state["answered"], state["skipped"]) == (1, 1)
        skips = (project / "labels" / "skipped.csv").read_text(encoding="utf-8").splitlines()[1:]
        from tagger.labelstore import default_annotator

        assert len(skips) == 1 and skips[0].split(",")[1] == default_annotator()  # (kept for a lead)
        state = page.undo()  # back to the first: the one skipped after it comes again
        assert (state["position"], state["answered"], state["skipped"]) == (0, 0, 0)
        page.answer("robotics")
        state = page.answer("theory")
        assert (state["position"], state["answered"], state["skipped"]) == (2, 2, 0)
    finally:
        page.stop()


def test_one_page_server_gives_each_annotator_their_own_queue_answers_undo_and_progress(project):
    page = Page(project, "--n", "4", people=("ana", "ben"))
    try:
        assert page.addresses["ana"] != page.addresses["ben"]
        ana = page.as_("ana").call("GET", "/api/state")
        ben = page.as_("ben").call("GET", "/api/state")
        assert (ana["annotator"], ben["annotator"], ana["total"], ben["total"]) == ("ana", "ben", 2, 2)
        assert ana["item"]["id"] != ben["item"]["id"]  # the queue dealt out: each abstract to one of them
        page.as_("ana").answer("robotics")
        ben = page.as_("ben").call("GET", "/api/state")
        assert (ben["answered"], ben["position"], ben["can_undo"]) == (0, 0, False)  # ana's is not his
        status, _, data = page.request("POST", "/api/undo", {"at": 0})
        assert status == 409 and json.loads(data)["error"] == "nothing to undo"
        page.answer("theory")
        # the page's checks hold for each: another page's request with ben's token is refused
        status, _, _ = page.request("POST", "/api/undo", {"at": 0}, headers={"Origin": "http://evil.example"})
        assert status == 403
        state = page.as_("ana").undo()
        assert (state["answered"], state["last"]["answer"]) == (0, "robotics")
        rows = label_rows(project)[-1:]
        assert [(r["annotator"], r["area"]) for r in rows] == [("ben", "theory")]
    finally:
        status, err = page.stop()
    assert status == 0 and "ana: labelled 0, skipped 0" in err and "ben: labelled 1, skipped 0" in err


@pytest.mark.slow  # a page server (2 s): the team's session (tests/test_team.py) uses --overlap too
def test_with_overlap_each_annotator_sees_every_abstract_and_answers_go_beside(project):
    page = Page(project, "--n", "3", "--overlap", people=("ana", "ben"))
    try:
        first = page.as_("ana").call("GET", "/api/state")["item"]["id"]
        assert page.as_("ben").call("GET", "/api/state")["item"]["id"] == first
        page.as_("ana").answer("robotics")
        page.as_("ben").answer("rl")
        rows = label_rows(project)[-2:]
        assert [(r["annotator"], r["area"]) for r in rows] == [("ana", "robotics"), ("ben", "rl")]
    finally:
        page.stop()


def test_annotators_are_for_one_page_only(project, capsys, monkeypatch):
    from conftest import run

    monkeypatch.chdir(project)
    status, _, err = run(capsys, "label", "pile.jsonl", "--annotators", "ana,ben")
    assert status == 1 and "--annotators names the people of one labelling page" in err


def test_fits_no_area_is_an_answer_with_a_topic_of_text_only(project):
    before = label_rows(project)
    page = Page(project, "--n", "5")
    try:
        at = page.call("GET", "/api/state")["item"]["at"]
        for topic, error in (
            (["graphs"], "the topic is list, not text"),
            (7, "the topic is int, not text"),
            ("x" * 201, "the topic 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'... is 201 characters"),
            (
                "graphs \ud800",
                "the topic 'graphs \\ud800' holds '\\ud800'",
            ),  # (a lone surrogate: no file holds it)
        ):
            status, _, data = page.request("POST", "/api/answer", {"area": "none", "at": at, "topic": topic})
            assert status == 409 and error in json.loads(data)["error"], data
        assert label_rows(project) == before
        state = page.call("POST", "/api/answer", {"area": "none", "at": at, "topic": "  Graph\nMining "})
        assert (state["answered"], state["no_area"], state["last"]["answer"]) == (1, 1, "none")
        assert state["keys"]["none"] == "n" and "n" not in {area["key"] for area in state["areas"]}
        assert [(r["area"], r["topic"]) for r in label_rows(project)[-1:]] == [("none", "graph mining")]
    finally:
        page.stop()


@pytest.mark.slow  # starts a page server process or two (2-6 s): in the slow run
def test_the_page_says_a_relabel_goes_beside_another_annotators_label(project):
    keep_labels(project, 12)
    first = Page(project, "--n", "1", "--annotator", "ben")
    try:
        first.answer("robotics")
    finally:
        first.stop()
    page = Page(project, "--relabel", "--n", "1", "--annotator", "ana")
    try:
        item = page.call("GET", "/api/state")["item"]
        assert item["current"] == "robotics"
        assert item["current_note"] == "labelled by ben too; your answer is kept beside theirs"  # (blind)
    finally:
        page.stop()


def test_answers_are_saved_at_once_and_undo_takes_one_back(project):
    before = label_rows(project)
    page = Page(project, "--n", "5")
    try:
        state = page.call("GET", "/api/state")
        assert state["total"] == 5 and state["position"] == 0 and state["last"] is None
        assert [a["key"] for a in state["areas"]][:3] == ["1", "2", "3"]
        # one set of keys for the page and the terminal: no area's key is one of its letters
        from tagger.labelling import KEYS

        assert state["keys"] == KEYS and {a["key"] for a in state["areas"]}.isdisjoint(KEYS.values())
        assert [a["key"] for a in state["areas"]][10] == "b"  # (the 11th area: a lists areas in the terminal)
        first = state["item"]["id"]
        assert "guess" not in json.dumps(state["item"])  # the model's guess comes after the answer
        # the highlights name no area before the answer: one kind of mark, the areas counted only
        item = state["item"]
        assert item["highlighted"] == 2 and {k for *_, k in item["text_marks"] + item["title_marks"]} <= {0}
        assert len(item["text_marks"]) > 0
        answers = []
        for _ in range(3):
            item = page.call("GET", "/api/state")["item"]
            area = "theory" if "regret" in item["text"] else "robotics"
            state = page.answer(area)
            answers.append((item["id"], area))
            assert state["last"]["answer"] == area and 0 < state["last"]["confidence"] <= 1
            assert len(label_rows(project)) == len(before) + len(answers)  # saved at once
        state = page.undo()
        assert state["last"]["undone"] and state["position"] == 2 and state["item"]["id"] == answers[-1][0]
        rows = label_rows(project)
        assert len(rows) == len(before) + 2 and rows[: len(before)] == before
        assert [row["area"] for row in rows[len(before) :]] == [a for _, a in answers[:2]]
        state = page.answer(None)  # skip
        assert state["skipped"] == 1 and state["last"]["answer"] is None
        assert first == answers[0][0]
    finally:
        status, err = page.stop()
    assert status == 0 and "labelled 2, skipped 1; saved to labels/labels.csv" in err


@pytest.mark.slow  # starts a page server process or two (2-6 s): in the slow run
def test_two_pages_and_the_terminal_labeller_at_once_lose_nothing(project):
    """Three sessions answer the same pile at once, each through the locked store: every
    answer is in the file at the end (one row an abstract: a later answer replaces one)."""
    pages = [Page(project, "--n", "5"), Page(project, "--n", "5")]
    errors = []

    def answer_all(page: Page, area: str) -> None:
        try:
            for _ in range(5):
                page.answer(area)
        except Exception as error:
            errors.append(error)

    threads = [
        threading.Thread(target=answer_all, args=(p, a)) for p, a in zip(pages, ("robotics", "theory"))
    ]
    terminal = subprocess.Popen(
        [sys.executable, "-m", "tagger", "label", "pile.jsonl", "--n", "5"],
        cwd=project, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    for thread in threads:
        thread.start()
    terminal.communicate("science\n" * 5, timeout=60)
    for thread in threads:
        thread.join(60)
    for page in pages:
        assert page.stop()[0] == 0
    assert not errors and terminal.returncode == 0
    rows = label_rows(project)
    digests = [row["abstract_id"] for row in rows]
    assert len(digests) == len(set(digests))  # one label an abstract
    from tagger.reading import abstract_id

    pile_digests = {abstract_id(text) for text in PILE}
    answered = [row for row in rows if row["abstract_id"] in pile_digests]
    assert len(answered) == 5 and {row["area"] for row in answered} <= {"robotics", "theory", "science"}
    texts = (project / "seeds" / "labelled.jsonl").read_text(encoding="utf-8")
    assert all(json.dumps(text)[1:-1] in texts for text in PILE)  # every labelled text kept


@pytest.mark.slow  # starts a page server process or two (2-6 s): in the slow run
def test_an_abstract_holding_markup_is_data_and_the_report_escapes_it(project):
    page = Page(project, "--n", "5")
    try:
        texts = []
        for _ in range(5):
            state = page.call("GET", "/api/state")
            texts.append(state["item"]["text"])
            page.answer(None)
        assert any(text.startswith("<script>window.pwned") for text in texts)  # as it is, as text
        status, headers, body = page.request("GET", f"/report?token={page.token}", token=False)
        html = body.decode("utf-8")
        assert status == 200 and "script-src" not in headers["Content-Security-Policy"]
        assert "<script" not in html and "<img" not in html
        assert "&lt;img src=x onerror=alert(1)&gt; Folding" in html  # the title, as text
        assert all(part in html for part in ("id=areas", "id=confidence", "id=look", "id=terms"))
    finally:
        page.stop()


@pytest.mark.slow  # trains
def test_retrain_from_the_page_saves_a_model_and_says_what_changed(project):
    page = Page(project, "--n", "3")
    try:
        page.answer("robotics")
        state = page.call("POST", "/api/retrain")
        assert state["retrain"]["state"] in ("running", "done")
        deadline = time.monotonic() + 120
        while state["retrain"]["state"] == "running" and time.monotonic() < deadline:
            time.sleep(0.5)
            state = page.call("GET", "/api/state")
        result = state["retrain"]["result"]
        assert state["retrain"]["state"] == "done", state["retrain"]
        assert result["labelled"] == 39 and result["saved"] == "models"
        assert [f["figure"] for f in result["figures"]] == [
            "labelled-abstracts",
            "accuracy",
            "macro-f1",
            "ece",
        ]
        # the first retrain compares with the model that guessed until now, the shipped one
        assert result["figures"][0]["before"] == "6121" and result["figures"][0]["after"] == "39"
        assert (project / "models" / "model.json").is_file()
        state = page.answer("theory")  # guesses now from the new model
        assert state["last"]["guess"]
        assert state["retrain"]["state"] == "idle"  # its figures leave the page with the next answer
    finally:
        page.stop()


@pytest.mark.slow  # starts a page server process or two (2-6 s): in the slow run
def test_a_port_in_use_is_one_clear_error(project):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run(
            [sys.executable, "-m", "tagger", "label", "pile.jsonl", "--web", "--port", str(port)],
            cwd=project, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert run.returncode == 1 and run.stdout == ""
    said = f"tagger: cannot serve the page on 127.0.0.1 port {port} (Address already in use). Give another --port"
    assert said in run.stderr
    assert "Traceback" not in run.stderr


words = st.text(alphabet=st.characters(categories=("L", "N")), min_size=1, max_size=6)


@given(
    st.lists(
        st.one_of(
            words,
            st.sampled_from(
                [" ", "-", ". ", "\n", "-\n", "é", "ﬁ", "<b>", "\\textbf{", " https://x.org/", "İ", "Σ"]
            ),
        ),
        max_size=40,
    ),
    st.lists(st.tuples(words, st.floats(0.001, 5)), max_size=6),
    st.lists(st.tuples(words, words, st.floats(0.001, 5)), max_size=4),
)
def test_highlights_mark_whole_words_of_the_terms_in_order(pieces, singles, pairs):
    import unicodedata

    text = "".join(pieces)
    terms = {
        "a": tuple((unicodedata.normalize("NFKC", w).lower(), p) for w, p in singles),
        "b": tuple((unicodedata.normalize("NFKC", f"{x} {y}").lower(), p) for x, y, p in pairs),
    }
    runs = highlights(text, terms, ["a", "b"])
    known = {t for found in terms.values() for t, _ in found}
    found = [(start, end, word) for word, start, end in word_spans(text)]  # (the analyser's words)
    from tagger.features import STOP_WORDS, is_term

    kept = [i for i, (_, _, word) in enumerate(found) if word not in STOP_WORDS]  # as the model pairs
    term_words = {i for i in kept if is_term(found[i][2]) and found[i][2] in known}
    for i, j in itertools.pairwise(kept):
        if is_term(found[i][2]) and is_term(found[j][2]) and f"{found[i][2]} {found[j][2]}" in known:
            term_words |= {i, j}
    at = 0
    covered = set()
    for start, end, k in runs:
        assert at <= start < end <= len(text) and k in (0, 1)
        inside = [i for i, (a, b, _) in enumerate(found) if a >= start and b <= end]
        assert inside and found[inside[0]][0] == start and found[inside[-1]][1] == end  # whole words
        assert set(inside) <= term_words  # every word marked is a term's
        covered |= set(inside)
        at = end
    assert covered == term_words  # and every term's word is marked


@pytest.mark.parametrize(
    ("text", "spans"),
    [
        ("AΣ-0A", [("aς", 0, 2), ("0a", 3, 5)]),  # a final sigma: lower case depends on what follows
        ("AΣ-BA and ΟΔΟΣ", [("aς", 0, 2), ("ba", 3, 5), ("and", 6, 9), ("οδος", 10, 14)]),
    ],
)
def test_a_word_whose_case_depends_on_its_neighbours_keeps_its_own_offsets(text, spans):
    """The thorough property test found 'AΣ-0A': lower case a character at a time gives a small sigma, the
    whole text a final one, so the run between spaces was one place and both words spanned all of it
    (the page then marked a word that is no term)."""
    assert word_spans(text) == spans


@pytest.mark.slow  # starts a page server process or two (2-6 s): in the slow run
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_server_stopped_or_killed_keeps_every_answer_given(project, how):
    before = label_rows(project)
    page = Page(project, "--n", "5")
    page.answer("robotics")
    page.answer("theory")
    page.process.send_signal(how)
    _, err = page.ended()
    assert len(label_rows(project)) == len(before) + 2
    if how == signal.SIGTERM:  # stopped: said in one line, as any command stopped so
        assert page.process.returncode == 143 and "Traceback" not in err


@pytest.mark.slow  # starts a page server process or two (2-6 s): in the slow run
def test_an_answer_meant_for_an_abstract_another_tab_answered_is_refused_not_misplaced(project):
    """Two tabs show abstract A; tab B labels it theory; tab A's vision (meant for A) must not
    land on B's next abstract, and tab A's undo must not take back tab B's answer."""
    before = label_rows(project)
    page = Page(project, "--n", "5")
    try:
        shown = page.call("GET", "/api/state")  # both tabs hold this state
        at, first = shown["item"]["at"], shown["item"]["id"]
        page.call("POST", "/api/answer", {"area": "theory", "at": at})  # tab B
        status, _, data = page.request("POST", "/api/answer", {"area": "vision", "at": at})  # tab A
        refused = json.loads(data)
        assert status == 409 and "answered or skipped already" in refused["error"]
        assert refused["item"]["at"] == at + 1 and refused["item"]["id"] != first  # the fresh state
        rows = label_rows(project)[len(before) :]
        assert [row["area"] for row in rows] == ["theory"]  # nothing saved for tab A's answer
        status, _, _ = page.request("POST", "/api/answer", {"area": "vision"})  # naming no abstract
        assert status == 409
        state = page.call("POST", "/api/answer", {"area": "vision", "at": at + 1})  # tab A, now current
        status, _, data = page.request("POST", "/api/undo", {"at": at})  # tab B's undo of its own
        assert status == 409 and "not the one this page gave" in json.loads(data)["error"]
        assert len(label_rows(project)) == len(before) + 2
        state = page.call("POST", "/api/undo", {"at": state["undo_at"]})
        assert state["last"]["undone"] and state["last"]["answer"] == "vision"
    finally:
        page.stop()


def raw_request(page: Page, data: bytes, timeout: float = 10) -> bytes:
    """Bytes sent as they are, and the reply's first line (b"" when the server closed)."""
    with socket.create_connection((page.host, page.port), timeout=timeout) as connection:
        connection.sendall(data)
        return connection.makefile("rb").readline()


@pytest.mark.slow  # starts a page server process or two (2-6 s): in the slow run
def test_malformed_requests_each_get_a_4xx_and_nothing_is_read_without_limit(project):
    page = Page(project, "--n", "5")
    host = f"Host: {page.host}:{page.port}\r\n".encode()
    token = f"X-Tagger-Token: {page.token}\r\n".encode()
    post = b"POST /api/answer HTTP/1.1\r\n" + host + token
    try:
        cases = {
            "a negative length": post + b"Content-Length: -1\r\n\r\n" + b"x" * 100_000,
            "a length that is no number": post + b"Content-Length: abc\r\n\r\n{}",
            "JSON nested too deep": post + b"Content-Length: 2000\r\n\r\n" + b"[" * 2000,
            "a token of other characters": b"GET /api/state HTTP/1.1\r\n"
            + host
            + "X-Tagger-Token: é\r\n\r\n".encode("latin-1"),
            "a token of other characters in the address": b"GET /?token=%C3%A9 HTTP/1.1\r\n" + host + b"\r\n",
        }
        for what, data in cases.items():
            status = raw_request(page, data).split(b" ")[1:2]
            assert status and status[0].startswith(b"4"), (what, status)
        assert page.call("GET", "/api/state")["position"] == 0  # still serving, nothing answered
    finally:
        status, err = page.stop()
    assert status == 0 and "internal error" not in err


@pytest.mark.slow  # waits for the idle connections' timeout
def test_idle_connections_neither_hold_the_page_nor_fill_the_terminal(project):
    from tagger.web import MAX_CONNECTIONS, SOCKET_TIMEOUT

    page = Page(project, "--n", "5")
    idle = []
    try:
        for _ in range(MAX_CONNECTIONS + 20):  # each sends a request line and nothing more
            connection = socket.create_connection((page.host, page.port), timeout=30)
            connection.sendall(b"GET /api/state HTTP/1.1\r\n")
            idle.append(connection)
        started = time.monotonic()
        status, _, _ = page.request("GET", "/api/state")  # answered at once: busy, not hung
        assert status in (200, 503) and time.monotonic() - started < 3
        deadline = time.monotonic() + SOCKET_TIMEOUT + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                if page.request("GET", "/api/state")[0] == 200:
                    break
            time.sleep(0.5)
        else:
            pytest.fail("the page stayed unreachable after its idle connections timed out")
        assert all(connection.recv(1) == b"" for connection in idle[:MAX_CONNECTIONS])  # closed by the page
    finally:
        for connection in idle:
            connection.close()
        status, err = page.stop()
    assert status == 0 and "internal error" not in err


@pytest.mark.slow  # starts a page server process or two (2-6 s): in the slow run
def test_the_report_of_the_page_tags_the_pile_once_however_many_ask_at_once(tmp_path, monkeypatch, shipped):
    from tagger.labelstore import ProjectLabels
    from tagger.model import Model
    from tagger.project import Project
    from tagger.reading import read_abstracts
    from tagger.web import labelling_app

    copy_project(tmp_path, ("labels", "seeds"))
    pile = list(read_abstracts([write_pile(tmp_path)]))
    calls = []
    original = Model.predict

    def counting(self, texts, **options):
        calls.append(len(texts))
        return original(self, texts, **options)

    monkeypatch.setattr(Model, "predict", counting)
    store = ProjectLabels(tmp_path / "labels", tmp_path / "seeds")
    project = Project(model_dir=str(tmp_path / "models"))
    app = labelling_app({"": ([], store)}, (), shipped, project, pile, "pile.jsonl")
    pages: list[str] = []
    threads = [threading.Thread(target=lambda: pages.append(app.report(shipped, ""))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    made = re.compile(r"made \d{4}-\d\d-\d\d \d\d:\d\d UTC")  # (a minute may turn meanwhile)
    assert len(pages) == 8 and len({made.sub("", page) for page in pages}) == 1 and calls == [len(pile)]


def test_the_page_s_report_shows_each_annotator_their_own_answers_only(tmp_path, shipped):
    """--annotators ana,ben --overlap: ben answers an abstract theory; ana's report link
    listed it with theory before she answered it. Each one's report has their own answers as
    its labels; the others' show after, never before."""
    from tagger.labelstore import ProjectLabels
    from tagger.project import Project
    from tagger.reading import read_abstracts
    from tagger.web import labelling_app

    copy_project(tmp_path, ("labels", "seeds"))
    pile = list(read_abstracts([write_pile(tmp_path)]))
    stores = {name: ProjectLabels(tmp_path / "labels", tmp_path / "seeds", name) for name in ("ana", "ben")}
    stores["ben"].add(pile[0], "theory")
    desks = {name: ([], store) for name, store in stores.items()}
    app = labelling_app(desks, (), shipped, Project(model_dir=str(tmp_path / "models")), pile, "pile.jsonl")
    assert "None of these abstracts is labelled" in app.report(shipped, "ana")
    assert "1 of these abstracts are labelled" in app.report(shipped, "ben")
    stores["ana"].add(pile[1], "robotics")
    assert "1 of these abstracts are labelled" in app.report(shipped, "ana")


@given(st.lists(st.sampled_from(["robot ", "🔥", "\U0001d465 ", "grasp ", "é", "jail", " "]), max_size=30))
def test_highlight_offsets_are_the_pages_utf16_units(pieces):
    """The page slices text in UTF-16 code units: each run, sliced so, is the same words the
    server marked, and never half of a character."""
    from tagger.web import in_utf16

    text = "".join(pieces)
    terms = {"a": (("robot", 1.0), ("grasp", 0.5)), "b": (("jail", 2.0),)}
    runs = highlights(text, terms, ["a", "b"])
    units = text.encode("utf-16-le")
    for (start, end, k), (u_start, u_end, u_k) in zip(runs, in_utf16(text, runs)):
        assert units[2 * u_start : 2 * u_end].decode("utf-16-le") == text[start:end] and k == u_k


@pytest.mark.slow  # starts a page server process or two (2-6 s): in the slow run
def test_the_page_marks_the_right_words_after_an_emoji(project):
    (project / "pile.jsonl").write_text(
        json.dumps({"id": "e1", "abstract": "🔥🔥 We propose a jailbreak attack on aligned language models."})
        + "\n"
    )
    page = Page(project, "--n", "1")
    try:
        item = page.call("GET", "/api/state")["item"]
        units = item["text"].encode("utf-16-le")
        assert item["text_marks"]
        for start, end, _ in item["text_marks"]:  # as the page slices: whole words, whole characters
            before = units[max(0, 2 * start - 2) : 2 * start].decode("utf-16-le", errors="replace")
            marked = units[2 * start : 2 * end].decode("utf-16-le", errors="replace")
            after = units[2 * end : 2 * end + 2].decode("utf-16-le", errors="replace")
            assert re.fullmatch(r"\w+( \w+)*", marked), marked
            assert not re.match(r"\w", before + " ") and not re.match(r"\w", after + " "), (
                before,
                marked,
                after,
            )
    finally:
        page.stop()


def test_highlights_pair_words_as_the_model_does():
    """The model pairs words after leaving stop words out ("robot of the arm" holds the term
    "robot arm"), and never pairs across a number or makes a term of a stop word: the page
    shows what the model read, through its own analyser (it paired raw neighbours)."""
    terms = {"a": (("robot arm", 2.0), ("the", 3.0)), "b": (("arm grasp", 1.0),)}
    text = "A robot of the arm, 42 grasp."
    runs = highlights(text, terms, ["a", "b"])
    marked = [(text[start:end], k) for start, end, k in runs]
    assert ("robot", 0) in marked and ("arm", 0) in marked
    assert all(word not in ("the", "grasp", "42") for word, _ in marked)


@pytest.mark.slow  # starts a page server process or two (2-6 s): in the slow run
def test_the_labelling_page_starts_without_importing_scikit_learn(tmp_path):
    """Importing scikit-learn takes seconds; the page needs it for a retrain only, which runs
    in workers of a fork server warmed in the background: the page's own process starts
    without it."""
    copy_project(tmp_path, ("labels", "seeds"))
    script = (
        "import sys\n"
        "from tagger.labelstore import ProjectLabels\n"
        "from tagger.model import load_model\n"
        "from tagger.project import Project\n"
        "from tagger.web import labelling_app\n"
        f"folder = {str(tmp_path)!r}\n"
        "store = ProjectLabels(folder + '/labels', folder + '/seeds')\n"
        "labelling_app({'': ([], store)}, (), load_model(), Project(model_dir=folder + '/models'), [], 'pile')\n"
        "print(sorted({name.split('.')[0] for name in sys.modules} & {'sklearn'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
