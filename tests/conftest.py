from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tagger import load_model
from tagger.cli import main
from tagger.labels import load_training_set
from tagger.training import train

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"  # the project's labelled abstracts: the seeds and those of 2022-24
LABELS = ROOT / "labels"
# The 38 seed abstracts (two files): what most tests tag, label beside and train on.
SEED_FILES = sorted(SEEDS.glob("neurips2026-*.txt"))


# Six labelled sentences of two areas of one's own (the README's example of a labelled file).
SIX_LABELS = [
    ("Robots grasp cups with tactile sensing.", "bots"),
    ("Legged robots walk on rough terrain.", "bots"),
    ("Arms learn manipulation from video.", "bots"),
    ("Proteins fold into structures.", "bio"),
    ("Genomes encode regulatory networks.", "bio"),
    ("Cells divide under stress signals.", "bio"),
]


def seed_label_rows() -> str:
    """labels.csv of the repository with the rows of the 38 seeds only (header included)."""
    from tagger.reading import abstract_id, read_abstracts

    digests = {abstract_id(a.text) for a in read_abstracts(SEED_FILES)}
    lines = (LABELS / "labels.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join([lines[0], *(line for line in lines[1:] if line.split(",", 1)[0] in digests)])


def copy_project(folder: Path, names=("labels", "seeds", "models")) -> Path:
    """A project in ``folder`` like the repository's, with the 38 seeds as its labelled
    abstracts (training on them takes a second, not the 3,409 labels' many): ``labels``
    (areas and the seeds' labels), ``seeds`` (their two files), ``models`` (the shipped model)."""
    import shutil

    for name in names:
        if name == "labels":
            (folder / name).mkdir()
            shutil.copy(LABELS / "areas.csv", folder / name / "areas.csv")
            (folder / name / "labels.csv").write_text(seed_label_rows(), encoding="utf-8", newline="")
        elif name == "seeds":
            (folder / name).mkdir()
            for path in SEED_FILES:
                shutil.copy(path, folder / name / path.name)
        else:
            shutil.copytree(ROOT / name, folder / name)
    return folder


def keep_labels(folder: Path, n: int) -> None:
    """Keep the first ``n`` labels of the project in ``folder`` (a relabel cross-validates
    them all: a dozen tell what forty would, in a third of the time)."""
    path = folder / "labels" / "labels.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[: n + 1]), encoding="utf-8", newline="")


def run(capsys, *args):
    """Run the ``tagger`` command in this process: (exit status, stdout, stderr)."""
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


# Property tests try a few examples in the default run and many in CI's thorough run
# (pytest -m hypothesis --hypothesis-profile=thorough).
for name, examples in (("quick", 12), ("thorough", 300)):
    settings.register_profile(
        name,
        deadline=None,
        max_examples=examples,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
settings.load_profile("quick")


@pytest.fixture(scope="session")
def shipped():
    return load_model()


@pytest.fixture(scope="session")
def training_set():
    """The repository's labels: the 38 seeds, 1,375 abstracts of 2022-24 and 1,996 preprints of 2025."""
    return load_training_set(LABELS, [SEEDS])


@pytest.fixture(scope="session")
def labelled_sample(training_set):
    """Every fourteenth of the repository's labelled abstracts (438, of every area and none,
    as the shipped model learns them): for tests of what training computes, which 6,121 would
    only make slower."""
    import dataclasses

    learnt = training_set.answering_no_area()
    every = slice(None, None, 14)
    return dataclasses.replace(
        learnt,
        texts=learnt.texts[every],
        labels=learnt.labels[every],
        ids=learnt.ids[every],
        weights=learnt.weights[every],
    )


@pytest.fixture(scope="session")
def seed_project(tmp_path_factory):
    """A project of the 38 seeds (see :func:`copy_project`), to read, not to change."""
    return copy_project(tmp_path_factory.mktemp("seed-project"))


@pytest.fixture(scope="session")
def seed_set(seed_project):
    """The training set of the 38 seeds alone."""
    return load_training_set(seed_project / "labels", [seed_project / "seeds"])


@pytest.fixture(scope="session")
def seed_model(seed_set, shipped):
    """A model of the 38 seeds with the shipped model's settings, calibrated on five folds
    (10,103 terms; half a second to train): for tests of how tagging runs (processes, chunks,
    streams) and of model files, which the shipped model's 291,247 terms only make slower."""
    from tagger.plan import Plan
    from tagger.training import Run

    return train(seed_set, shipped.card.settings, run=Run(plan=Plan(leave_one_out_max=0)))


@pytest.fixture(scope="session")
def seed_model_folder(seed_model, tmp_path_factory):
    """:func:`seed_model` saved, for the command line's --model."""
    folder = tmp_path_factory.mktemp("seed-model")
    seed_model.save(folder)
    return folder


@pytest.fixture(scope="session")
def retrained(training_set):
    """The shipped recipe run again on the repository's labels (takes a few seconds)."""
    return train(training_set)


def sklearn_pipeline(fitted, settings, areas: int):
    """The scikit-learn pipeline a fit equals (TfidfVectorizer + its classifier), for the tests
    and benchmarks that compare the two: the model is exported from the fit itself."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import Pipeline

    from tagger.fitting import features_max

    vectorizer = TfidfVectorizer(
        analyzer=settings.analyzer,
        sublinear_tf=settings.sublinear_tf,
        min_df=settings.min_df,
        max_features=features_max(areas),
        dtype=np.float64,
    )
    vectorizer.vocabulary_ = fitted.vocabulary.mapping(fitted.corpus.names)
    vectorizer.idf_ = fitted.vocabulary.idf
    return Pipeline([("tfidf", vectorizer), ("classifier", fitted.classifier)])


def fit_pipeline(training_set, settings, corpus=None):
    """:func:`sklearn_pipeline` of a fit on ``training_set``."""
    from tagger.fitting import fit

    return sklearn_pipeline(fit(training_set, settings, corpus), settings, len(training_set.slugs))


def with_card(model, **changes):
    """A copy of ``model`` with some card fields replaced (the arrays shared)."""
    from dataclasses import replace

    from tagger.model import Model

    return Model(replace(model.card, **changes), model.vocabulary, model.idf, model.coef, model.intercept)


def tag_abstracts(abstracts, model, *, jobs=1, chunk_size=None):
    """Each abstract with its prediction, in input order (the batch's blocks, one by one)."""
    from tagger.batch import CHUNK_SIZE, tag_blocks
    from tagger.prediction import predictions

    for chunk, probabilities in tag_blocks(abstracts, model, jobs=jobs, chunk_size=chunk_size or CHUNK_SIZE):
        yield from zip(chunk, predictions(probabilities, model.areas, model.review_threshold))


def evidence(texts, vocabulary):
    """The evidence a model with ``vocabulary`` (a container of terms) has about each text,
    counted plainly, word by word: ``k * k / w``, ``w`` the text's words that are not stop words
    and ``k`` those of them that are features (with repeats). The reference the model's and
    training's fast counts are checked against."""
    import numpy as np

    from tagger.features import STOP_WORDS, evidence_from_counts, words

    found = [[word for word in words(text) if word not in STOP_WORDS] for text in texts]
    known = np.array([sum(word in vocabulary for word in text) for text in found], dtype=np.int64)
    return evidence_from_counts(known, np.array([len(text) for text in found], dtype=np.int64))
