"""A project of one's own, outside this repository: tagger init, then label, train, predict."""

import csv
import gzip
import io
import json
import sys

import pytest
from conftest import LABELS, run

from tagger.labels import load_areas, load_training_set
from tagger.model import load_model


def pile(folder):
    texts = [
        "Robots grasp cups with a two-finger gripper on a mobile manipulator.",
        "We prove a regret bound for contextual bandits with linear rewards.",
        "A diffusion model generates images of anime faces from text prompts.",
    ]
    path = folder / "pile.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{i}", "abstract": t}) + "\n" for i, t in enumerate(texts)))
    return path


def test_init_makes_a_project_with_the_shipped_labels(capsys, tmp_path, monkeypatch, training_set):
    monkeypatch.chdir(tmp_path)
    status, _, err = run(capsys, "init")
    assert status == 0 and "made labels/labels.csv: 6121 labels the shipped model learnt from" in err
    assert load_areas(tmp_path / "labels" / "areas.csv") == load_areas(LABELS / "areas.csv")
    mine = load_training_set(tmp_path / "labels", [tmp_path / "seeds"])
    assert mine.by_id() == training_set.by_id()  # the same labels, on the same texts
    assert sorted(mine.texts) == sorted(training_set.texts)
    assert "yours add to them" in (tmp_path / "TAGGER.txt").read_text()


def test_init_empty_makes_a_project_without_labels_and_never_overwrites_one(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, _, err = run(capsys, "init", "--empty")
    assert status == 0 and "made labels/areas.csv" in err and "TAGGER.txt" in err
    assert load_areas(tmp_path / "labels" / "areas.csv") == load_areas(LABELS / "areas.csv")
    assert (
        tmp_path / "labels" / "labels.csv"
    ).read_text() == "abstract_id,area,title,annotator,labelled_at,answer_id,topic,role,comment,flag\n"
    assert (
        list((tmp_path / "seeds").iterdir()) == [] and "tagger label" in (tmp_path / "TAGGER.txt").read_text()
    )
    before = (tmp_path / "labels" / "labels.csv").read_bytes()
    status, _, err = run(capsys, "init")
    assert status == 1 and "exists already: this folder is a project" in err
    assert (tmp_path / "labels" / "labels.csv").read_bytes() == before
    assert run(capsys, "init", tmp_path / "other" / "place")[0] == 0  # made where it is asked for
    assert (tmp_path / "other" / "place" / "labels" / "areas.csv").is_file()


def test_outside_a_project_the_error_says_how_to_make_one(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, "train")
    assert (status, out) == (2, "")
    assert err == (
        "tagger: labels/areas.csv: file not found. Run 'tagger init' to make a project here (the default "
        "taxonomy and labels), or point --labels at the folder that holds areas.csv.\n"
    )


def test_a_new_project_labels_trains_and_tags(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "init", "--empty")[0] == 0
    status, _, err = run(capsys, "train")  # nothing labelled yet: said, not a crash
    assert status == 2 and err.startswith("tagger: labels: no hand labels yet. Label some abstracts first")
    papers = pile(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO("robotics\nrobotics\nrobotics\n"))
    status, _, err = run(capsys, "label", papers, "--n", "3")
    assert status == 0 and "labelled 3, skipped 0; saved to labels/labels.csv" in err
    status, _, err = run(capsys, "train")
    assert (
        status == 0
        and "trained on 3 labelled abstracts" in err
        and (tmp_path / "models" / "model.json").is_file()
    )
    status, _, err = run(capsys, "predict", papers, "-o", "out.jsonl.gz")
    rows = [
        json.loads(line) for line in gzip.decompress((tmp_path / "out.jsonl.gz").read_bytes()).splitlines()
    ]
    assert status == 0 and [r["id"] for r in rows] == ["p0", "p1", "p2"]
    assert "model: models/ of this folder" in err and "on 3 labelled abstracts of labels" in err


@pytest.mark.slow  # trains on the shipped labels and three more
def test_a_retrain_in_a_new_project_builds_on_the_shipped_labels(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "init")[0] == 0
    papers = pile(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO("robotics\ntheory\ngenerative\n"))
    assert run(capsys, "label", papers, "--n", "3")[0] == 0
    status, _, err = run(capsys, "train")
    assert status == 0 and "trained on 6124 labelled abstracts" in err
    model = load_model(tmp_path / "models")
    assert model.card.evaluation.accuracy > 0.6  # what the shipped labels teach, kept
    # the first retrain replaces the shipped model: its settings kept (no search), compared with it
    shipped = load_model()
    assert model.card.settings == shipped.card.settings and "kept the settings" in err
    assert "kept the settings the previous model chose; --search chooses anew" in err
    assert "labelled-abstracts        6121      6124" in err
    assert "on the 3 label(s) new since the previous model" in err


def test_every_command_that_uses_a_model_says_which(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    papers = pile(tmp_path)
    shipped = "model: the shipped model, trained "
    for command in (["explain", papers], ["explain", "--text", "Robots grasp cups."], ["suggest", papers]):
        status, _, err = run(capsys, *command)
        assert status == 0 and err.splitlines()[-1].startswith(shipped), command
    assert run(capsys, "init")[0] == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    status, _, err = run(capsys, "label", papers)
    assert status == 0 and err.startswith(shipped)


def test_init_never_writes_through_a_symlink(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p" / "labels").mkdir(parents=True)
    (tmp_path / "p" / "labels" / "areas.csv").symlink_to("../../outside-areas.csv")  # dangling
    status, _, err = run(capsys, "init", "p")
    assert status != 0 and "p/labels/areas.csv exists already" in err
    assert not (tmp_path / "outside-areas.csv").exists()
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "seeds").symlink_to(tmp_path / "elsewhere")
    status, _, err = run(capsys, "init", "q")
    assert (
        status != 0 and "q/seeds exists and is not a folder" in err and not (tmp_path / "elsewhere").exists()
    )


def test_init_on_a_full_disk_leaves_no_half_project_and_names_the_project(capsys, tmp_path, monkeypatch):
    """A real write that fails part way (the process may write files of 200 KB at most, as on
    a disk that fills: labels.csv is twice that): one line naming the project, no half
    project left, and a second init makes it whole."""
    import resource
    import signal
    import subprocess
    import sys

    def small_files() -> None:  # (in the child only)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, not kills
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    done = subprocess.run(
        [sys.executable, "-m", "tagger", "init", "p"],
        cwd=tmp_path, capture_output=True, text=True, preexec_fn=small_files, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0 and "File too large" in done.stderr and "Traceback" not in done.stderr
    assert "site-packages" not in done.stderr and "taxonomy" not in done.stderr and "p" in done.stderr
    left = sorted(str(path.relative_to(tmp_path / "p")) for path in (tmp_path / "p").rglob("*"))
    assert left in ([], ["labels", "seeds"])  # no file of a project, no hidden staging folder
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "init", "p")[0] == 0  # and a second init makes it whole
    assert (tmp_path / "p" / "labels" / "labels.csv").stat().st_size > 1000


TWO_AREAS = (
    'astro,Astronomy,"Stars, galaxies, telescopes and the planets that orbit stars.",galaxy;star;planet\n'
    'bio,Biology,"Cells, proteins, genes and the tissues they make up.",protein;cell;gene\n'
)


def own_areas_project(capsys, tmp_path, monkeypatch, areas: str = TWO_AREAS) -> None:
    """'tagger init --empty' in ``tmp_path`` (the folder run in), with ``areas`` (rows of
    areas.csv) as its taxonomy."""
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "init", "--empty")[0] == 0
    (tmp_path / "labels" / "areas.csv").write_text("slug,name,description,keywords\n" + areas)


def test_a_project_of_ones_own_areas_starts_labelling_before_any_model(capsys, tmp_path, monkeypatch):
    """After 'tagger init --empty' and an areas.csv of one's own, label and suggest work with
    a first model learnt from the areas' descriptions; the labels then train a real one
    (label said 'retrain' and train said 'label first': each pointed to the other)."""
    own_areas_project(capsys, tmp_path, monkeypatch)
    (tmp_path / "pile.txt").write_text(
        "Galaxies form stars in dense clouds.\n\nProteins fold inside the cell.\n\nThe planet orbits a dwarf star.\n"
    )
    status, out, err = run(capsys, "suggest", "pile.txt", "--n", "3")
    assert status == 0 and "astro" in out and "learnt from the areas' descriptions alone" in err
    monkeypatch.setattr(sys, "stdin", io.StringIO("astro\nbio\nastro\n"))
    status, out, err = run(capsys, "label", "pile.txt", "--n", "3")
    assert status == 0 and "labelled 3, skipped 0" in err
    status, _, err = run(capsys, "train")
    assert status == 0 and "trained on 3 labelled abstracts" in err
    status, out, _ = run(capsys, "predict", "pile.txt")
    assert status == 0 and {row["area"] for row in csv.DictReader(out.splitlines())} == {"astro", "bio"}


def test_every_verb_of_a_project_of_its_own_areas_uses_one_model(capsys, tmp_path, monkeypatch):
    """init --empty with four areas of one's own and no model yet: suggest and label used the
    model learnt from the descriptions, predict the shipped eleven ('science 36 of 43'). Now
    predict, explain, suggest and label all use that first model, before a label and after
    one (a second session was refused once a label existed), say so, and answer its areas; a
    model in models/ of areas since changed is refused by all alike."""
    own_areas_project(
        capsys, tmp_path, monkeypatch,
        'astro,Astronomy,"Stars, galaxies, telescopes and planets.",galaxy;star\n'
        'bio,Biology,"Cells, proteins and genes.",protein;cell\n'
        'chem,Chemistry,"Molecules, reactions and catalysts.",molecule;catalysis\n'
        'cs,Computing,"Algorithms, software and programming languages.",algorithm;compiler\n',
    )  # fmt: skip
    (tmp_path / "pile.txt").write_text("Galaxies form stars.\n\nProteins fold inside the cell.\n")
    own = {"astro", "bio", "chem", "cs"}
    for labelled in (0, 1):
        status, out, err = run(capsys, "predict", "pile.txt")
        assert status == 0 and {row["area"] for row in csv.DictReader(out.splitlines())} <= own, out
        waiting = "1 hand label(s) not learnt yet" if labelled else "no hand labels yet"
        assert f"learnt from the areas' descriptions alone ({waiting}" in err
        status, out, err = run(capsys, "explain", "pile.txt")
        assert status == 0 and "learnt from the areas' descriptions alone" in err
        monkeypatch.setattr(sys, "stdin", io.StringIO("astro\n"))
        status, out, err = run(capsys, "label", "pile.txt", "--n", "1")
        assert status == 0 and "learnt from the areas' descriptions alone" in err, err
    (tmp_path / "models").mkdir()
    load_model().save(tmp_path / "models")  # (a model of other areas: the shipped one's)
    for command in (["predict", "pile.txt"], ["suggest", "pile.txt"], ["label", "pile.txt"]):
        status, _, err = run(capsys, *command)
        assert status == 1 and "the model in models/ answers other areas than labels/areas.csv" in err, err


def test_train_on_the_project_s_own_export_learns_as_the_project_does(capsys, tmp_path, monkeypatch):
    """tagger labels -o export.csv, then train --data export.csv: the file's areas are the
    project's, so it learns from their descriptions too, as 'tagger train' does (it dropped
    them, and made a worse model without saying why): the same training set, and a note."""
    from tagger.labels import labelled
    from tagger.project import Project

    own_areas_project(capsys, tmp_path, monkeypatch)
    texts = ["Galaxies form stars.", "The planet orbits a star.", "A telescope maps a galaxy.",
             "Proteins fold in the cell.", "Genes code for proteins.", "Cells divide in tissue."]  # fmt: skip
    (tmp_path / "pile.txt").write_text("\n\n".join(texts) + "\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO("astro\n" * 3 + "bio\n" * 3))
    status, _, err = run(capsys, "label", "pile.txt", "--n", "6")
    assert status == 0 and "labelled 6, skipped 0" in err, err
    assert run(capsys, "labels", "-o", "export.csv")[0] == 0
    status, _, err = run(capsys, "train", "--data", "export.csv", "--model", "from-export")
    assert (
        status == 0
        and "note: export.csv's areas are those of labels/: learnt with their descriptions too" in err
    )
    from_export = load_model(tmp_path / "from-export").card.training_data
    project = Project().training_set()
    assert from_export.uses_area_descriptions and from_export.sha256 == project.fingerprint()
    assert labelled("export.csv").use_descriptions is False  # (outside the project's folder rule)


def test_a_project_of_one_label_is_told_what_it_needs_not_an_internal_error(capsys, tmp_path, monkeypatch):
    from tagger.labelstore import ProjectLabels
    from tagger.reading import Abstract

    monkeypatch.chdir(tmp_path)
    assert run(capsys, "init", ".", "--empty")[0] == 0
    ProjectLabels("labels", "seeds", annotator="ana").add(
        Abstract("p1", "Robots grasp cups with tactile skins.", "p.jsonl", 1, 1), "robotics"
    )
    for command in ("train", "evaluate"):
        status, out, err = run(capsys, command)
        assert (status, out) == (2, "") and err == (
            "tagger: labels: one hand label: too few to cross-validate (a model is measured on labels it did "
            "not see). Label at least one more abstract (tagger label papers/ --n 20), then train.\n"
        ), err


@pytest.mark.parametrize("folder", ["seeds", "labels", "seeds/more"])
def test_train_never_saves_a_model_into_the_labels_or_their_texts(capsys, tmp_path, monkeypatch, folder):
    """--model naming the project's labels or texts folder (or one inside them) is refused
    before training: a model.json there would be read as abstracts (or labels) next time."""
    from conftest import copy_project

    copy_project(tmp_path, ("labels", "seeds"))
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in (tmp_path / folder.split("/")[0]).iterdir())
    status, out, err = run(capsys, "train", "--model", folder)
    assert status == 2 and out == ""
    assert f"tagger: {folder}: is inside this project's {folder.split('/')[0]}/" in err and "--model" in err
    assert sorted(p.name for p in (tmp_path / folder.split("/")[0]).iterdir()) == before
    assert run(capsys, "predict", "seeds", "-o", "tags.csv")[0] == 0  # the project still works


def test_a_first_model_of_the_descriptions_alone_claims_no_more_than_one_example_an_area_can_back():
    """Learnt from no hand label, the first model said 1.0 for 'Robots grasp cups' (a
    confidence no label measured): each area's description counts as one example, so its
    confidence is at most (k + 1) / 2k for k areas, by the rule of succession that caps a model
    of few labels; the ranking of the areas is the same."""
    import numpy as np

    from tagger.calibration import confidence_ceiling
    from tagger.labels import Area
    from tagger.training import descriptions_model

    areas = (
        Area(
            "bots",
            "Robotics",
            "Robots that grasp, walk and manipulate objects; embodied control.",
            ("robot",),
        ),
        Area("bio", "Biology", "Proteins, genes and cells; structure prediction and genomics.", ("protein",)),
        Area("vision", "Vision", "Images and video: detection, segmentation, recognition.", ("image",)),
    )
    model = descriptions_model(areas)
    ceiling = confidence_ceiling(len(areas), len(areas))
    assert model.card.calibration.ceiling == pytest.approx(ceiling) and ceiling == pytest.approx(4 / 6)
    texts = ["Robots grasp cups with tactile sensors.", "Proteins fold into structures.", "Video of cells."]
    tags = model.predict(texts)
    assert [tag.area for tag in tags[:2]] == ["bots", "bio"]
    assert all(tag.confidence <= ceiling + 1e-6 for tag in tags) and all(tag.needs_review for tag in tags)
    for tag in tags:  # the order of the areas is the uncapped one's
        scores = np.array([tag.scores[slug] for slug in model.taxonomy])
        assert abs(scores.sum() - 1) < 1e-9 and tag.area == model.taxonomy[int(scores.argmax())]
