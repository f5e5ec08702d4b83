"""The package is typed: a ``py.typed`` marker ships with it, mypy finds nothing in it, and the
public API gives what its documentation says (a ``str`` one :class:`Prediction`, a list a list)."""

import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT

import tagger


def test_the_package_carries_its_py_typed_marker_and_exports_what_train_takes():
    assert (ROOT / "tagger" / "py.typed").is_file()
    assert "TrainingSettings" in tagger.__all__ and tagger.TrainingSettings is not None
    import inspect

    assert "TrainingSettings" in str(inspect.signature(tagger.train).parameters["settings"].annotation)


@pytest.mark.slow  # mypy reads the package and its dependencies' stubs: half a minute cold
def test_mypy_is_clean_on_the_package_and_on_a_user_s_script(tmp_path):
    pytest.importorskip("mypy")
    script = tmp_path / "users_script.py"
    script.write_text(
        textwrap.dedent(
            """
            from typing_extensions import assert_type  # (typing has it from 3.11)

            import tagger
            from tagger import Prediction, TrainingSettings, predict

            one = predict("We train a robot to grasp cups.")
            assert_type(one, Prediction)
            many = predict(["a", "b"])
            assert_type(many, list[Prediction])
            model = tagger.train(["Robots grasp.", "Cells divide."], ["bots", "bio"], settings=TrainingSettings())
            assert_type(model.predict("x").confidence, float)
            """
        )
    )
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            str(ROOT / "tagger"),
            str(script),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert found.returncode == 0, found.stdout + found.stderr
