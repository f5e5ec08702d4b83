from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tagger import load_model
from tagger.cli import main
from tagger.labels import load_training_set
from tagger.training import train

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
LABELS = ROOT / "labels"


def run(capsys, *args):
    """Run the ``tagger`` command in this process: (exit status, stdout, stderr)."""
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


settings.register_profile(
    "tagger", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.load_profile("tagger")


@pytest.fixture(scope="session")
def shipped():
    return load_model()


@pytest.fixture(scope="session")
def training_set():
    return load_training_set(LABELS, [SEEDS])


@pytest.fixture(scope="session")
def retrained(training_set):
    """The shipped recipe run again on the repository's labels (takes a few seconds)."""
    return train(training_set)
