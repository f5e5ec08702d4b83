"""What a lead reads of a team's labels: Krippendorff's alpha for any number of annotators,
each area's specific agreement, and what each annotator did."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tagger.agreement import annotator_figures, described_agreement, krippendorff_alpha, specific_agreement

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": four coders, twelve
# units, nominal values, some missing; his worked answer is 0.743.
CODERS = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def test_krippendorff_s_alpha_is_his_own_worked_example():
    units = [[str(v) for v in unit if v is not None] for unit in zip(*CODERS)]
    assert krippendorff_alpha(units) == pytest.approx(0.743, abs=0.0005)


def test_alpha_is_one_when_all_agree_and_undefined_without_variation_or_pairs():
    assert krippendorff_alpha([["a", "a"], ["b", "b", "b"]]) == pytest.approx(1.0)
    assert krippendorff_alpha([["a", "a"], ["a", "a"]]) is None
    assert krippendorff_alpha([["a"], ["b"]]) is None


@given(st.lists(st.lists(st.sampled_from("abc"), min_size=2, max_size=4), min_size=2, max_size=12))
def test_alpha_is_at_most_one_and_the_area_agreements_are_shares(units):
    alpha = krippendorff_alpha(units)
    assert alpha is None or alpha <= 1 + 1e-9
    for share, n in specific_agreement(units).values():
        assert 0 <= share <= 1 and 1 <= n <= len(units)


def test_specific_agreement_counts_the_pairs_that_name_an_area():
    # unit 1: a,a (one pair of a's agrees); unit 2: a,b (a and b each once, no agreement)
    assert specific_agreement([["a", "a"], ["a", "b"]]) == {"a": (2 / 3, 2), "b": (0.0, 1)}


def rows(*labels):
    return [
        {"abstract_id": f"d{i}", "annotator": who, "area": area, "role": "", "labelled_at": at, "title": f"t{i}",
         "abstract": "text", "source_id": ""}
        for i, who, area, at in labels
    ]  # fmt: skip


def test_a_lead_reads_each_annotator_alpha_and_agreement_by_area():
    labels = rows(
        (1, "ana", "llm", "2026-01-01T10:00:00Z"), (2, "ana", "none", "2026-01-01T10:00:10Z"),
        (3, "ana", "vision", "2026-01-01T10:00:30Z"), (3, "ana", "vision", "2026-01-01T11:00:00Z"),
        (1, "ben", "llm", "2026-01-01T10:00:00Z"), (2, "ben", "vision", "2026-01-01T10:00:06Z"),
        (1, "cy", "llm", "2026-01-01T09:00:00Z"), (2, "cy", "none", ""),
    )  # fmt: skip
    assert annotator_figures(labels) == {"ana": (4, 1, 15.0, 0), "ben": (2, 0, 6.0, 0), "cy": (2, 1, None, 0)}
    text = described_agreement(labels)
    assert "ana: 4 labelled, 1 of them none, 15 s a label (median)" in text  # (the hour's pause left out)
    assert "cy: 2 labelled, 1 of them none\n" in text
    assert "Krippendorff's alpha (nominal) over the 2 abstracts two or more annotators labelled: " in text
    assert (
        "agreement by area (of the pairs where one said it, the share where the other did too): llm 1.00 of 1"
        in text
    )
    two = described_agreement([row for row in labels if row["annotator"] != "cy"])
    assert "Krippendorff" not in two and "agreement by area" in two  # (alpha: three annotators or more)


def test_a_lead_reads_what_each_annotator_skipped_and_has_not_labelled_since(tmp_path, monkeypatch, capsys):
    """Skips were not kept, so a lead could not count them: each skip is kept in
    labels/skipped.csv (terminal and page alike), and --agreement says, per annotator, the
    abstracts skipped and not labelled since."""
    import io
    import json
    import sys

    from conftest import copy_project, run

    copy_project(tmp_path, ("labels", "seeds", "models"))
    texts = [
        "Robots climb stairs from depth images.",
        "A regret bound for bandits.",
        "Diffusion makes faces.",
    ]
    (tmp_path / "pile.jsonl").write_text(
        "".join(json.dumps({"id": f"p{i}", "abstract": t}) + "\n" for i, t in enumerate(texts))
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO("s\ns\ntheory\n"))
    status, _, err = run(capsys, "label", "pile.jsonl", "--n", "3", "--annotator", "ana")
    assert status == 0 and "labelled 1, skipped 2" in err
    skipped = (tmp_path / "labels" / "skipped.csv").read_text(encoding="utf-8").splitlines()
    assert skipped[0] == "abstract_id,annotator,skipped_at" and [
        line.split(",")[1] for line in skipped[1:]
    ] == ["ana", "ana"]
    status, out, _ = run(capsys, "labels", "--agreement")
    assert "ana: 1 labelled, 0 of them none, 2 skipped (not labelled since)" in out, out
    # a skipped abstract labelled later is skipped no longer
    monkeypatch.setattr(sys, "stdin", io.StringIO("robotics\n"))
    assert run(capsys, "label", "pile.jsonl", "--n", "1", "--annotator", "ana")[0] == 0
    status, out, _ = run(capsys, "labels", "--agreement")
    assert "ana: 2 labelled, 0 of them none, 1 skipped (not labelled since)" in out, out
    # a reviewer's skip leaves a disagreement to review: no annotator's skip
    from tagger.labelstore import ProjectLabels
    from tagger.reading import read_abstracts

    ProjectLabels("labels", "seeds", "rita", reviewing=True).skip(next(iter(read_abstracts(["pile.jsonl"]))))
    assert "rita" not in run(capsys, "labels", "--agreement")[1]
