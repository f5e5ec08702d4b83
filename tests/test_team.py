"""A team's labelling session, end to end in a fresh project: two annotators label the same 20
abstracts at once (one in the terminal, one on the page), three of their answers ``none``, four
disagreeing; a reviewer settles the four; the export holds one final label each beside every
annotator's answer; training counts what it trained on; agreement is the two annotators'."""

import csv
import io
import json
import subprocess
import sys

import pytest
from conftest import run
from test_web import Page

from tagger.labelstore import NONE, REVIEW
from tagger.project import Project
from tagger.reading import read_abstracts

# Twenty abstracts, each written for the area beside it (none: it fits no area).
PILE = [
    ("A quadruped robot learns to climb stairs from proprioception and a depth camera.", "robotics"),
    ("We prove a regret bound for contextual bandits with linear rewards and heavy tails.", "theory"),
    ("A diffusion model generates images of faces from text prompts in four sampling steps.", "generative"),
    ("Membership inference attacks recover which records trained a language model.", "safety"),
    ("We pretrain a large language model on code and evaluate it on reasoning benchmarks.", "llm"),
    ("Object detection in aerial images with a vision transformer and multi-scale features.", "vision"),
    ("An agent learns to play Atari games from pixels with off-policy Q-learning.", "rl"),
    ("Stochastic gradient descent with momentum converges for nonconvex smooth objectives.", "optimization"),
    (
        "Variational inference for Gaussian processes with inducing points scales to big data.",
        "probabilistic",
    ),
    ("Graph neural networks predict the energy of molecules for drug discovery.", "science"),
    ("We schedule GPU kernels to speed up distributed training of large models.", "systems"),
    ("Robot arms learn to grasp unseen objects from human video demonstrations.", "robotics"),
    ("Fine-tuning language models with human feedback reduces harmful answers.", "llm"),
    ("Semantic segmentation of street scenes with a lightweight convolutional network.", "vision"),
    ("Sample complexity lower bounds for learning halfspaces with label noise.", "theory"),
    ("Normalizing flows model densities of images with invertible layers.", "generative"),
    ("Adversarial examples fool image classifiers; certified defences bound the attack.", "safety"),
    ("A user study of how older adults navigate smartphone menus.", NONE),
    ("Collaborative filtering recommends films from the ratings of similar users.", NONE),
    ("Forecasting electricity demand from smart meter data with seasonal decomposition.", NONE),
]
DISAGREE = {1: "rl", 4: "generative", 9: "probabilistic", 13: "robotics"}  # ben's other reading
TOPICS = {17: "hci", 18: "recommender systems", 19: "time series"}


def answer_of(k: int, who: str) -> str:
    area = PILE[k][1] if who == "ana" else DISAGREE.get(k, PILE[k][1])
    return f"{NONE} {TOPICS[k]}" if area == NONE else area


@pytest.mark.slow  # a page server, a terminal session and two trainings (10-20 s): in the slow run
def test_a_team_labels_reviews_exports_and_trains(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "init", "--empty")[0] == 0
    (tmp_path / "pile.jsonl").write_text(
        "".join(json.dumps({"id": f"p{k}", "abstract": t}) + "\n" for k, (t, _) in enumerate(PILE))
    )
    # the order both queues take (the same model, the same pile, nothing labelled yet)
    project = Project()
    queue = project.queue(read_abstracts(["pile.jsonl"]), project.model(), project.store("ana"), 20)
    order = [int(item.abstract.id[1:]) for item in queue]
    assert sorted(order) == list(range(20))

    page = Page(tmp_path, "--n", "20", "--overlap", "--annotator", "ben")  # ben on the page ...
    terminal = subprocess.Popen(  # ... and ana in the terminal, at the same time
        [sys.executable, "-m", "tagger", "label", "pile.jsonl", "--n", "20", "--overlap", "--annotator", "ana"],
        cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        for k in order:
            state = page.call("GET", "/api/state")
            assert state["item"]["id"] == f"p{k}"
            given = answer_of(k, "ben")
            area, _, topic = given.partition(" ")
            page.call("POST", "/api/answer", {"area": area, "at": state["item"]["at"], "topic": topic})
        out, err = terminal.communicate("".join(answer_of(k, "ana") + "\n" for k in order), timeout=120)
    finally:
        status, page_err = page.stop()
    assert terminal.returncode == 0, err
    assert (
        "labelled 20 (3 fit no area), skipped 0" in err
        and "labelled 20 (3 fit no area), skipped 0" in page_err
    )

    status, out, _ = run(capsys, "labels", "--agreement")
    assert (
        status == 0
        and "ana and ben: 20 abstracts labelled by both, agreeing on 16 (80%), Cohen's kappa " in out
    )
    kappa = float(out.split("Cohen's kappa ")[1].split()[0])
    assert 0.7 < kappa < 0.85
    assert "4 disagreement(s): none settled by review yet" in out

    # rita settles the four: her reading of each, one at a time
    review = [k for k in range(20) if k in DISAGREE]
    settle = {1: "theory", 4: "llm", 9: "science", 13: "vision"}
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(settle[k] + "\n" for k in review)))
    status, out, err = run(capsys, "label", "--review", "--annotator", "rita", "pile.jsonl")
    assert status == 0 and out.count("annotators said ana ") == 4 and "labelled 4, skipped 0" in err

    status, _, err = run(capsys, "labels", "-o", "all.csv")
    rows = list(csv.DictReader(io.StringIO((tmp_path / "all.csv").read_text(encoding="utf-8"))))
    assert status == 0 and len(rows) == 44  # 20 + 20 answers, 4 final labels
    finals = {}
    for row in rows:
        if row["final"] == "yes":
            assert row["abstract_id"] not in finals  # one final label each
            finals[row["abstract_id"]] = (row["area"], row["annotator"], row["role"])
    assert len(finals) == 20
    by_text = {r["abstract_id"]: r["abstract"] for r in rows}
    for digest, (area, _, role) in finals.items():
        k = next(k for k, (text, _) in enumerate(PILE) if text == by_text[digest])
        assert (area, role == REVIEW) == (settle.get(k, PILE[k][1]), k in settle)
    assert {r["annotator"] for r in rows} == {"ana", "ben", "rita"}

    status, _, err = run(capsys, "train")
    assert status == 0, err
    assert "trained on 17 labelled abstracts" in err and "and 3 that fit no area (not trained on)" in err
    # the exported file trains on the same final labels
    status, _, err = run(capsys, "train", "--data", "all.csv", "--model", "from-export")
    assert status == 0 and "trained on 17 labelled abstracts" in err and "and 3 that fit no area" in err
