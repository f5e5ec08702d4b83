"""The labelling page (``tagger label PILE --web``): one page served on 127.0.0.1 (or the address
``--host`` gives, for a lab's annotators on their own machines) over the same
queue, label store and locks as the terminal labeller (:class:`tagger.labelling.Session`,
:mod:`tagger.labelstore`). Every answer is written at once, as in the terminal.

Safe by construction:

- the server binds one address (127.0.0.1 unless ``--host`` gives another, never every
  address at once), and answers a request only when its ``Host`` names that address as the
  links do (a page elsewhere cannot reach it by a name that resolves here);
- every request carries the session's random token: the page's address holds it
  (``?token=``), and the page sends it back in a header on every call, which a page of
  another origin cannot do without a preflight this server never answers; a POST from
  another origin is refused as well;
- no file path comes from a request: the abstracts, the label files and the report are the
  session's own; the page puts every text on screen as text (``textContent``), never as
  markup, and its Content-Security-Policy allows its own script and style only.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib
import ipaddress
import json
import re
import secrets
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..errors import UsageError
from ..features import TextAnalyzer
from ..labelling import AREA_KEYS, KEYS, Session, Suggestion
from ..labels import Area
from ..labelstore import NONE, Remark, topic_of
from ..model import Model
from ..schema import located

HOST = "127.0.0.1"
TOKEN_HEADER = "X-Tagger-Token"
HIGHLIGHT_AREAS = 2  # the model's top areas whose terms are highlighted
HIGHLIGHT_TERMS = 8  # terms per area
MAX_BODY = 4096  # bytes of a request body (an answer is a few dozen)
MAX_CONNECTIONS = 32  # open at once; more are refused at once (503), not queued for ever
SOCKET_TIMEOUT = 10.0  # seconds a connection may wait for a request's next bytes, or sit idle
LISTEN_BACKLOG = 128  # connections waiting to be accepted (a burst of answers is not reset)


HOST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*\.?")


@dataclass(frozen=True)
class ServedAt:
    """Where the page is served: ``host`` as its links name it (what annotators open) and the
    ``address`` bound (one, of ``family``)."""

    host: str
    address: str
    family: int = socket.AF_INET

    @property
    def loopback(self) -> bool:
        return ipaddress.ip_address(self.address).is_loopback

    def names(self, port: int) -> set[str]:
        """What a request's ``Host`` may say: the host of the links or its address, with the
        port (and ``localhost`` for 127.0.0.1, the default)."""
        names = {_netloc(self.host, port), _netloc(self.address, port)}
        if self.address == HOST:
            names.add(f"localhost:{port}")
        return {name.lower() for name in names}

    def link(self, port: int, token: str) -> str:
        return f"http://{_netloc(self.host, port)}/?token={token}"

    def refused(self, error: OSError, port: int | None) -> UsageError:
        """The error of a page that cannot be served here: a port in use, or an address that
        is not this machine's."""
        import errno

        where = f"{self.host} port {port}" if port else self.host
        in_use = error.errno == errno.EADDRINUSE
        return UsageError(
            f"cannot serve the page on {where} ({error.strerror or error})",
            fix="Give another --port, or leave it out for a free one."
            if in_use
            else "Give an address of this machine as --host ('hostname -I' lists them).",
        )

    def reach(self) -> str:
        """What the terminal says of who can open the page."""
        if self.loopback:
            return "(this machine only; Ctrl-C stops it, every answer is saved already)"
        return (
            f"tagger: warning: the page is served on {self.host}, beyond this machine: whoever reaches "
            "it with a link labels as that link's annotator, over plain http (not encrypted). Give each "
            "link to its annotator only, on a network you trust. Ctrl-C stops it; every answer is "
            "saved already"
        )


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def served_at(host: str | None = None) -> ServedAt:
    """Where ``--host`` serves the page: an address of this machine (127.0.0.2, 10.0.0.5,
    ::1) or a name that resolves to one; one address, never every address at once (the
    page could not check the name it was reached by)."""
    host = HOST if host is None else host.strip().removeprefix("[").removesuffix("]")
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
        if not HOST_NAME.fullmatch(host) or len(host) > 253:
            raise UsageError(
                f"--host {host!r}: not an address or a host name",
                fix="Give an address of this machine (127.0.0.1, 10.0.0.5; 'hostname -I' lists them).",
            ) from None
    if literal is not None and literal.is_unspecified:
        raise UsageError(
            f"--host {host}: that is every address of this machine at once, and the page answers "
            "only the address its links name",
            fix="Give the one address annotators open ('hostname -I' lists this machine's).",
        )
    try:
        family, _, _, _, bound = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0]
    except (OSError, UnicodeError) as error:
        raise UsageError(
            f"--host {host}: not found ({getattr(error, 'strerror', None) or error})",
            fix="Give an address of this machine (127.0.0.1, 10.0.0.5; 'hostname -I' lists them).",
        ) from None
    return ServedAt(host, str(bound[0]).split("%")[0], family)


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


@dataclass
class Retraining:
    """The state of the retrain started from the page."""

    state: str = "idle"  # idle, running, done, failed
    result: dict | None = None
    error: str = ""


@dataclass
class LabellingApp:
    """What the page shows and changes: each annotator's session over their queue (their own
    answers, undo and progress: ``sessions`` by name), the areas, the model that guesses, and
    the retrain, which they share. ``retrain()`` (from the command line) trains on the labels
    as they are now, saves the model and returns what changed (plain data); ``report()``
    returns the overview of the pile as one HTML page. Every method is called under one lock."""

    sessions: dict[str, Session]
    areas: tuple[Area, ...]
    model: Model
    source: str
    retrain: Callable[[], tuple[Model, dict]] | None = None
    report: Callable[[Model, str], str] | None = None
    retraining: Retraining = field(default_factory=Retraining)
    last: dict[str, dict] = field(default_factory=dict)  # each one's answer just given, with the guess
    lock: threading.Lock = field(default_factory=threading.Lock)

    def keys(self) -> dict[str, str]:
        return {area.slug: key for area, key in zip(self.areas, AREA_KEYS)}

    def state(self, who: str) -> dict:
        """What ``who`` (an annotator) sees now."""
        session = self.sessions[who]
        item = session.current
        keys = self.keys()
        return {
            "annotator": who,
            "source": self.source,
            "areas": [  # (each with its description: the labelling guidelines)
                {"slug": a.slug, "name": a.name, "description": a.description, "key": keys.get(a.slug, "")}
                for a in self.areas
            ],
            "keys": KEYS,  # none, skip, undo, retrain: the terminal's letters
            "none": NONE,
            "total": len(session.queue),
            "position": session.index,
            "answered": len(session.result.labelled),
            "no_area": session.result.no_area,
            "skipped": session.result.skipped,
            "can_undo": session.can_undo,
            "undo_at": session.answered[-1][0] if session.can_undo else None,
            "last": self.last.get(who),
            "item": None if item is None else self._item(item, session.index),
            "retrain": {
                "available": self.retrain is not None,
                "state": self.retraining.state,
                "result": self.retraining.result,
                "error": self.retraining.error,
            },
            "report": self.report is not None,
        }

    def _item(self, item: Suggestion, at: int) -> dict:
        abstract = item.abstract
        by_area = self.model.terms_toward(abstract.document, HIGHLIGHT_AREAS, HIGHLIGHT_TERMS)
        # One kind of mark, whichever area a word pulls toward: the page names no area before the
        # answer (the model's guess, and so its likeliest areas, show after it).
        terms, order = {"": tuple(term for pushes in by_area.values() for term in pushes)}, [""]
        return {
            "at": at,  # its place in the queue: every answer names it
            **located(abstract),
            "text": abstract.text,
            "title_marks": in_utf16(abstract.title, highlights(abstract.title, terms, order)),
            "text_marks": in_utf16(abstract.text, highlights(abstract.text, terms, order)),
            "highlighted": len(by_area),  # the likeliest areas whose words are marked
            "current": item.current,
            "current_note": item.current_note(),  # what an answer does to that label
        }

    def answer(self, who: str, said: dict) -> None:
        """``who`` answers their current abstract as the page ``said``: its ``area`` (None:
        skip; :data:`~tagger.labelstore.NONE` with an optional ``topic``: it fits no area),
        with an optional ``comment`` and ``flag``; ``at`` is the place in their queue of the
        abstract the page showed: an answer meant for another abstract (given in another tab
        meanwhile) is refused, never pinned on the one now current."""
        area, at, topic = said.get("area"), said.get("at"), said.get("topic", "")
        area = area if isinstance(area, str) else None
        session = self.sessions[who]
        if session.current is None:
            raise PageError("every abstract of the queue is answered")
        if at != session.index or isinstance(at, bool):
            raise PageError(
                "that abstract was answered or skipped already (in another tab?): here is the next"
            )
        if self.retraining.state in ("done", "failed"):  # its figures were read: the page moves on
            self.retraining = Retraining()
        if area is None:
            item = session.skip()
            self.last[who] = {"id": item.abstract.id, "answer": None, **self._guess(item)}
            return
        if area not in {a.slug for a in self.areas} | {NONE}:
            raise PageError(f"unknown area {area!r}")
        try:  # (the store's rules for a topic, a comment and a flag, as every door's)
            topic = topic_of(topic)
            remark = Remark(said.get("comment", ""), said.get("flag", False))
        except (ValueError, TypeError) as error:
            raise PageError(str(error)) from None
        item = session.answer(area, topic if area == NONE else "", remark)
        self.last[who] = {
            "id": item.abstract.id,
            "answer": area,
            "flagged": remark.flagged,
            "commented": bool(remark.comment),
            **self._guess(item),
        }

    def _guess(self, item: Suggestion) -> dict:
        """The model's guess and what other annotators said: shown once the item is answered."""
        prediction = self.model.predict(item.abstract.document)
        return {
            "guess": prediction.area,
            "confidence": round(prediction.confidence, 4),
            "others": item.others_said(),
        }

    def undo(self, who: str, at: object = None) -> None:
        """Take back ``who``'s last answer (never another annotator's), which must be the one
        the page means (``at``: its place in the queue); another tab's later answer is not
        taken back in its stead."""
        session = self.sessions[who]
        latest = session.answered[-1][0] if session.can_undo else None
        if latest is not None and (at != latest or isinstance(at, bool)):
            raise PageError("the last answer is not the one this page gave (another tab answered since)")
        undone = session.undo()
        if undone is None:
            raise PageError("nothing to undo")
        ok, which, area = undone
        self.last[who] = {"undone": ok, "id": which, "answer": area}

    def start_retrain(self) -> None:
        if self.retrain is None:
            raise PageError("retraining is not available here")
        if self.retraining.state == "running":
            return
        self.retraining = Retraining("running")
        threading.Thread(target=self._retrain, daemon=True).start()

    def _retrain(self) -> None:
        assert self.retrain is not None  # (started only when there is one)
        try:
            model, result = self.retrain()
        except Exception as error:  # shown on the page; the labels are untouched either way
            with self.lock:
                self.retraining = Retraining("failed", error=str(error))
            return
        with self.lock:
            self.model = model
            self.retraining = Retraining("done", result)


# The retrain and the report of the labelling page look at the first this many abstracts of
# the pile (how many changed area; the overview).
PILE_COMPARED = 20_000


def labelling_app(
    desks: dict[str, tuple[list[Suggestion], Any]],
    areas: tuple[Area, ...],
    model: Model,
    project,
    pile: list,
    source: str,
) -> LabellingApp:
    """The app of ``tagger label --web``: for each annotator (``desks`` by name), a session
    over their queue, their answers saved in their store (:mod:`tagger.labelstore`); the
    retrain of ``project``
    (:class:`tagger.project.Project`: its labels, saved where it saves), and the report of
    ``pile`` (the first :data:`PILE_COMPARED` abstracts of the pile:
    :class:`tagger.reading.Abstract`)."""
    from ..corpus import Corpus
    from ..evaluate import figure_text
    from ..report import build, overview_of
    from ..workers import warm_up

    sample = pile[:PILE_COMPARED]
    folder = project.save_to
    # The retrain runs from a thread, which cannot fork workers safely: a fork server, started
    # now with training's imports made, forks them in milliseconds when the button is pressed.
    warm_up()
    analysed = Corpus()  # each labelled text analysed once in the session, for every retrain

    def prepare() -> None:
        """The first retrain's slow parts, done from the first answer on while the next
        abstracts are read: every text its cross-validation reads analysed, training's modules
        imported (the page itself starts without them)."""
        with contextlib.suppress(Exception):  # (the retrain says what is wrong, if anything)
            training = importlib.import_module("tagger.training")
            learnt = training.answering_no_area(project.training_set())
            training.analyse(learnt, project.run().plan, analysed)
            importlib.import_module("tagger.retraining")

    preparing = threading.Thread(target=prepare, daemon=True)
    once = threading.Lock()

    def start_preparing() -> None:
        with once:
            if preparing.ident is None:
                preparing.start()

    def answered(save: Callable) -> Callable:
        def saved(abstract, area: str, topic: str, remark: Remark):
            start_preparing()
            return save(abstract, area, topic, remark)

        return saved

    def retrain_now() -> tuple[Model, dict]:
        start_preparing()
        preparing.join()  # (the corpus is the retrain's once it is analysed)
        done = project.retrain([a.document for a in sample], corpus=analysed)
        compared = done.comparison
        figures = [
            {"figure": name.replace("_", "-"), "before": figure_text(compared["before"][name]),
             "after": figure_text(compared["after"][name])}
            for name in compared["after"]
        ]  # fmt: skip
        moved = (
            f"{compared['changed']} of {compared['compared']} abstracts of the pile changed area"
            if compared["changed"] is not None
            else "no model in the folder before this one to compare with"
        )
        labelled = done.model.card.training_data.labelled_abstracts
        return done.model, {"labelled": labelled, "saved": str(folder), "figures": figures, "moved": moved}

    tagged: dict[str, Any] = {}  # the pile's predictions by the model that made them: made once
    one_at_a_time = threading.Lock()  # a report holds the pile's tags: one is built at a time

    def overview(current: Model, who: str) -> str:
        """The report of the pile with ``who``'s own answers as its labels: blind to the other
        annotators' (their answers showed before hers; a reviewer sees every label)."""
        with one_at_a_time:
            if tagged.get("model") is not current:
                tagged.clear()
                tagged["predictions"] = current.predict([a.document for a in sample])
                tagged["model"] = current
            trained = set(current.card.training_data.labels)
            own = desks[who][1].own()
            overview = overview_of(sample, tagged["predictions"], own, trained, NONE in current.areas)
            return build(overview, current, f"tagger report: {source}")

    sessions = {
        who: Session(queue, answered(store.add), store.undo, store.skip)
        for who, (queue, store) in desks.items()
    }
    return LabellingApp(sessions, areas, model, source, retrain_now, overview)


class PageError(Exception):
    """A request the page should not have made (shown to it, status 409)."""


def highlights(text: str, terms: dict[str, tuple[tuple[str, float], ...]], order: list[str]) -> list[list]:
    """``text`` cut into runs, each ``[start, end, k]``: the run's character offsets and the
    index in ``order`` of the area its words push toward most (the terms are words and word
    pairs, found by the model's own analyser: :meth:`tagger.features.TextAnalyzer.spans`).
    Runs without such a word are not listed; the page shows the rest of the text as it is."""
    if not text:
        return []
    best: dict[str, tuple[float, int]] = {}
    for k, area in enumerate(order):
        for term, push in terms[area]:
            if push > best.get(term, (0.0, 0))[0]:
                best[term] = (push, k)
    marks: dict[tuple[int, int], tuple[float, int]] = {}  # a word's span: its strongest term's mark
    for term, spans in TextAnalyzer(ngram_max=2).spans(text):
        if (mark := best.get(term)) is not None:
            for span in spans:
                if span not in marks or marks[span][0] < mark[0]:
                    marks[span] = mark
    runs: list[list] = []
    for (start, end), mark in sorted(marks.items()):
        if runs and runs[-1][2] == mark[1] and text[runs[-1][1] : start].isspace():
            runs[-1][1] = end  # a pair of words, or neighbours of one area: one run
        else:
            runs.append([start, end, mark[1]])
    return runs


def in_utf16(text: str, runs: list[list]) -> list[list]:
    """``runs`` (character offsets into ``text``) as offsets in UTF-16 code units, which is
    how the page's JavaScript counts: a character past U+FFFF (an emoji, a math letter) is
    one character here and two units there."""
    if text.isascii() or all(ord(c) <= 0xFFFF for c in text):
        return runs
    units = [0]
    for character in text:
        units.append(units[-1] + (2 if ord(character) > 0xFFFF else 1))
    return [[units[start], units[end], k] for start, end, k in runs]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT  # a connection that sends nothing is closed, not held for ever

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the terminal shows the address and what was saved, not every request

    # -- checks ------------------------------------------------------------------------------

    def _allowed(self, token: str | None, post: bool = False) -> str | None:
        """The annotator whose token the request carries, when it passes every check; else
        None, the refusal sent."""
        server = self.server
        if (self.headers.get("Host") or "").lower() not in server.hosts:
            self._send_text(HTTPStatus.MISDIRECTED_REQUEST, "this server answers its own address only")
            return None
        given = (token or "").encode("utf-8", "surrogateescape")  # any characters: compared as bytes
        # every token compared, each in constant time: which one matched takes no longer to find
        matched = [
            who for mine, who in server.tokens.items() if secrets.compare_digest(given, mine.encode("ascii"))
        ]
        if not given or not matched:
            self._send_text(HTTPStatus.FORBIDDEN, "forbidden: open the address tagger printed")
            return None
        origin = self.headers.get("Origin")
        if post and origin is not None and origin not in server.origins:
            self._send_text(HTTPStatus.FORBIDDEN, "forbidden: another page's request")
            return None
        return matched[0]

    # -- requests ----------------------------------------------------------------------------

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if url.path in ("/", "/report"):
            if (who := self._allowed(next(iter(query.get("token") or ()), None))) is None:
                return
            if url.path == "/":
                self._send(
                    HTTPStatus.OK, self.server.page, "text/html; charset=utf-8", self.server.page_policy
                )
                return
            app = self.server.app
            if app.report is None:
                self._send_text(HTTPStatus.NOT_FOUND, "no report here")
                return
            with app.lock:
                model = app.model
            html = app.report(model, who)
            self._send(HTTPStatus.OK, html.encode("utf-8"), "text/html; charset=utf-8", REPORT_POLICY)
            return
        if url.path == "/api/state":
            if (who := self._allowed(self.headers.get(TOKEN_HEADER))) is None:
                return
            with self.server.app.lock:
                self._send_json(HTTPStatus.OK, self.server.app.state(who))
            return
        if (
            self._allowed(next(iter(query.get("token") or ()), None) or self.headers.get(TOKEN_HEADER))
            is None
        ):
            return
        self._send_text(HTTPStatus.NOT_FOUND, "not found")

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        if (who := self._allowed(self.headers.get(TOKEN_HEADER), post=True)) is None:
            return
        declared = self.headers.get("Content-Length") or "0"
        if not re.fullmatch(r"[0-9]{1,12}", declared.strip()):
            self._send_text(HTTPStatus.BAD_REQUEST, "bad Content-Length")
            return
        length = int(declared)
        if length > MAX_BODY:
            self._send_text(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request too large")
            return
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except (ValueError, RecursionError):
            self._send_text(HTTPStatus.BAD_REQUEST, "not JSON")
            return
        if not isinstance(body, dict):
            self._send_text(HTTPStatus.BAD_REQUEST, "not a JSON object")
            return
        app = self.server.app
        actions: dict[str, Callable[[], None]] = {
            "/api/answer": lambda: app.answer(who, body),
            "/api/undo": lambda: app.undo(who, body.get("at")),
            "/api/retrain": app.start_retrain,
        }
        action = actions.get(url.path)
        if action is None:
            self._send_text(HTTPStatus.NOT_FOUND, "not found")
            return
        with app.lock:
            try:
                action()
            except PageError as error:
                self._send_json(HTTPStatus.CONFLICT, {"error": str(error), **app.state(who)})
                return
            except OSError as error:  # the label file cannot be written (a full disk): said on the page
                reason = error.strerror or str(error)
                self._send_json(
                    HTTPStatus.INSUFFICIENT_STORAGE,
                    {
                        "error": f"the label file cannot be written ({reason}); nothing was lost",
                        **app.state(who),
                    },
                )
                return
            self.server.on_change(app)
            self._send_json(HTTPStatus.OK, app.state(who))

    # -- responses ---------------------------------------------------------------------------

    def _send(self, status: HTTPStatus, body: bytes, kind: str, policy: str = "default-src 'none'") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", policy)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, status: HTTPStatus, data: dict) -> None:
        self._send(status, json.dumps(data, ensure_ascii=False).encode("utf-8"), "application/json")

    def _send_text(self, status: HTTPStatus, text: str) -> None:
        self._send(status, (text + "\n").encode("utf-8"), "text/plain; charset=utf-8")


BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


# The report is one self-contained page: its own inline style, no script, nothing fetched.
REPORT_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self, app: LabellingApp, port: int, on_change: Callable[[LabellingApp], None], where: ServedAt
    ) -> None:
        self.address_family = where.family
        super().__init__((where.address, port), _Handler)
        self.app = app
        self.on_change = on_change
        self.where = where
        self.tokens = {secrets.token_urlsafe(24): who for who in app.sessions}  # one link each
        port = self.server_address[1]
        self.hosts = where.names(port)
        self.origins = {f"http://{host}" for host in self.hosts}
        script, style = _asset("page.js"), _asset("page.css")
        html = _asset("page.html").replace("/*STYLE*/", style).replace("/*SCRIPT*/", script)
        self.page = html.encode("utf-8")
        self.page_policy = (
            f"default-src 'none'; script-src '{_sha256(script)}'; style-src '{_sha256(style)}'; "
            "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        )
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request, client_address) -> None:
        """A thread for the connection while fewer than :data:`MAX_CONNECTIONS` are open;
        past that, 503 at once and closed."""
        if not self.slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(BUSY)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request, client_address) -> None:
        """A request that failed in this server (a bug): one line on stderr, no traceback
        (TAGGER_DEBUG=1 shows it); the server goes on."""
        import os
        import sys

        from ..terminal import say

        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            return  # the client went away, or sent nothing in time: not an error of the page
        if os.environ.get("TAGGER_DEBUG"):
            super().handle_error(request, client_address)
            return
        say(f"tagger: internal error in the labelling page ({type(error).__name__}: {error})")

    @property
    def addresses(self) -> dict[str, str]:
        """Each annotator's own address (their link: its token is theirs)."""
        return {who: self.where.link(self.server_address[1], token) for token, who in self.tokens.items()}


def serve(
    app: LabellingApp,
    port: int = 0,
    on_start: Callable[[dict[str, str]], None] = print,
    on_change: Callable[[LabellingApp], None] = lambda app: None,
    where: ServedAt | None = None,
) -> None:
    """Serve the page on ``where`` (127.0.0.1 unless given) until interrupted (Ctrl-C: the
    server stops, every answer is saved already); ``on_start`` gets each annotator's address,
    ``on_change`` the app after each change."""
    server = start(app, port, on_change, where)
    on_start(server.addresses)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()


def start(
    app: LabellingApp,
    port: int = 0,
    on_change: Callable[[LabellingApp], None] = lambda app: None,
    where: ServedAt | None = None,
) -> _Server:
    """The server, bound and ready (not yet serving: call ``serve_forever``, or run it in a
    thread as the tests do)."""
    return _Server(app, port, on_change, where or served_at())
