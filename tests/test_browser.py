"""The labelling page in a real browser: headless Chromium, driven by selenium, labels three
abstracts by keyboard and undoes one; an abstract holding ``<script>`` shows as text; the
address without its token is refused. Skipped, saying why, where no browser is installed
(``.ci/run`` installs Debian's chromium and chromium-driver)."""

from __future__ import annotations

import contextlib
import shutil
import time

import pytest
from conftest import copy_project
from test_web import MARKUP_TITLE, Page, label_rows, write_pile

pytestmark = pytest.mark.browser  # not in the default run: `pytest -m browser` (CI runs them)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
webdriver = pytest.importorskip(
    "selenium.webdriver", reason="selenium is not installed (pip install '.[test]')"
)
if not (CHROMIUM and CHROMEDRIVER):
    pytest.skip(
        "no Chromium and ChromeDriver here (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )

from selenium.webdriver.chrome.service import Service  # noqa: E402 (after the skip)
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def browser(tmp_path, width: int = 1200, height: int = 900):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--window-size={width},{height}", f"--user-data-dir={tmp_path / 'chromium'}",
    ):  # fmt: skip
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def wait_for(driver, condition, timeout: float = 20):
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(lambda d: condition(d))


def area_keys(driver) -> dict[str, str]:
    """The key of each area's button, as the page shows it."""
    return {
        button.get_attribute("data-area"): button.find_element(By.TAG_NAME, "kbd").get_attribute(
            "textContent"
        )
        for button in driver.find_elements(By.CSS_SELECTOR, "button.area")
    }


def progress(driver) -> str:
    return driver.find_element(By.ID, "progress").text


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    copy_project(folder, ("labels", "seeds"))
    write_pile(folder)
    return folder


@contextlib.contextmanager
def labelling_page(project, tmp_path):
    """``tagger label pile.jsonl --web --n 5`` in ``project``, open in a headless Chromium:
    (page, driver); both stopped afterwards."""
    page = Page(project, "--n", "5")
    driver = browser(tmp_path)
    try:
        driver.get(page.address)
        wait_for(driver, lambda d: progress(d).startswith("0 of 5"))
        yield page, driver
    finally:
        driver.quit()
        page.stopped = page.stop()  # (exit status, stderr)


def test_three_answers_by_keyboard_and_an_undo_leave_two_labels(project, tmp_path):
    before = label_rows(project)
    with labelling_page(project, tmp_path) as (page, driver):
        body = driver.find_element(By.TAG_NAME, "body")
        keys = area_keys(driver)
        shown = []
        for n, area in enumerate(("robotics", "theory", "generative"), start=1):
            shown.append(driver.find_element(By.ID, "text").text)
            body.send_keys(keys[area])
            wait_for(driver, lambda d, n=n: progress(d).startswith(f"{n} of 5"))
            feedback = driver.find_element(By.ID, "feedback").text
            assert feedback.startswith(f"labelled {area}; the model said ")  # its guess, after the answer
            assert len(label_rows(project)) == len(before) + n  # saved at once
        body.send_keys("u")
        wait_for(driver, lambda d: progress(d).startswith("2 of 5"))
        assert driver.find_element(By.ID, "text").text == shown[-1]  # back at the undone abstract
        assert "undone: generative" in driver.find_element(By.ID, "feedback").text
        rows = label_rows(project)
        assert len(rows) == len(before) + 2 and [r["area"] for r in rows[len(before) :]] == [
            "robotics",
            "theory",
        ]
    status, err = page.stopped
    assert status == 0 and "labelled 2, skipped 0" in err


def test_the_areas_descriptions_are_the_page_s_guidelines_shown_as_text(project, tmp_path):
    """Each area's description from areas.csv is on the page (a panel and each button's title):
    the guidelines an annotator reads, as text even when it holds markup."""
    areas = project / "labels" / "areas.csv"
    areas.write_text(
        areas.read_text(encoding="utf-8").replace("Robots", "<b>Robots</b>", 1), encoding="utf-8"
    )
    with labelling_page(project, tmp_path) as (_, driver):
        panel = driver.find_element(By.ID, "guidelines")
        panel.find_element(By.TAG_NAME, "summary").click()
        terms = [dt.text for dt in panel.find_elements(By.TAG_NAME, "dt")]
        texts = [dd.text for dd in panel.find_elements(By.TAG_NAME, "dd")]
        assert len(terms) == len(area_keys(driver)) and terms[0] == "llm (Language models and NLP)", terms
        assert any("<b>Robots</b>" in text for text in texts) and not panel.find_elements(By.TAG_NAME, "b")
        robotics = driver.find_element(By.CSS_SELECTOR, 'button[data-area="robotics"]')
        assert robotics.get_attribute("title").startswith(
            "Robotics and embodied AI: <b>Robots</b> and embodied"
        )


def test_fits_no_area_by_key_and_by_button_with_a_topic_then_undone(project, tmp_path):
    before = label_rows(project)
    with labelling_page(project, tmp_path) as (page, driver):
        body = driver.find_element(By.TAG_NAME, "body")
        body.send_keys("n")
        wait_for(driver, lambda d: progress(d).startswith("1 of 5 · 1 labelled (1 no area)"))
        assert driver.find_element(By.ID, "feedback").text.startswith(
            "labelled none (fits no area); the model"
        )
        topic = driver.find_element(By.ID, "topic")
        topic.send_keys("Time series n s")  # letters typed in the field answer nothing
        assert progress(driver).startswith("1 of 5")
        driver.find_element(By.ID, "none").click()
        wait_for(driver, lambda d: progress(d).startswith("2 of 5 · 2 labelled (2 no area)"))
        assert topic.get_attribute("value") == ""
        rows = label_rows(project)[len(before) :]
        assert [(r["area"], r["topic"]) for r in rows] == [("none", ""), ("none", "time series n s")]
        body.send_keys("u")
        wait_for(driver, lambda d: progress(d).startswith("1 of 5 · 1 labelled (1 no area)"))
        assert len(label_rows(project)) == len(before) + 1
    status, err = page.stopped
    assert status == 0 and "labelled 1 (1 fits no area), skipped 0" in err


def test_the_retrain_result_shows_in_view_and_leaves_with_the_next_answer(project, tmp_path):
    """On a 1000-pixel window the retrain's figures are on screen, above the abstract and
    clear of the button bar (they sat below the abstract, behind it), until the next answer;
    before an answer, the highlights' legend names no area."""
    page = Page(project, "--n", "5")
    driver = browser(tmp_path, 1200, 1000)
    try:
        driver.get(page.address)
        wait_for(driver, lambda d: progress(d).startswith("0 of 5"))
        legend = driver.find_element(By.ID, "legend").text
        assert "likeliest areas" in legend and not any(area in legend.split() for area in area_keys(driver))
        body = driver.find_element(By.TAG_NAME, "body")
        body.send_keys("r")
        wait_for(driver, lambda d: "retrained on" in d.find_element(By.ID, "retraining").text, timeout=240)
        box = driver.find_element(By.ID, "retraining").rect
        bar = driver.find_element(By.TAG_NAME, "footer").rect
        assert box["y"] >= 0 and box["y"] + box["height"] <= min(
            bar["y"], driver.execute_script("return innerHeight")
        )
        body.send_keys(area_keys(driver)["robotics"])
        wait_for(driver, lambda d: progress(d).startswith("1 of 5"))
        wait_for(driver, lambda d: not d.find_element(By.ID, "retraining").is_displayed())
    finally:
        driver.quit()
        page.stop()


def test_a_comment_and_a_flag_go_with_the_next_answer_then_clear(project, tmp_path):
    """Typed in the comment field (the area keys do not answer while typing), ``!`` flags,
    the area's key answers: the label keeps both, the page says so and clears them."""
    before = label_rows(project)
    with labelling_page(project, tmp_path) as (_, driver):
        comment = driver.find_element(By.ID, "comment")
        comment.click()
        comment.send_keys("stairs 1 n s u, not a gait")  # (area keys and letters, typed as text)
        comment.send_keys("\n")  # Enter leaves the field
        body = driver.find_element(By.TAG_NAME, "body")
        body.send_keys("!")
        assert driver.find_element(By.ID, "flag").is_selected()
        body.send_keys(area_keys(driver)["robotics"])
        wait_for(driver, lambda d: progress(d).startswith("1 of 5"))
        assert driver.find_element(By.ID, "feedback").text.startswith(
            "labelled robotics; flagged; with your comment"
        )
        assert comment.get_attribute("value") == "" and not driver.find_element(By.ID, "flag").is_selected()
        body.send_keys(area_keys(driver)["theory"])
        wait_for(driver, lambda d: progress(d).startswith("2 of 5"))
    rows = label_rows(project)[len(before) :]
    assert [(r["area"], r["flag"], r["comment"]) for r in rows] == [
        ("robotics", "yes", "stairs 1 n s u, not a gait"),
        ("theory", "", ""),
    ]


def test_markup_in_an_abstract_shows_as_text_and_never_runs(project, tmp_path):
    page = Page(project, "--n", "5")
    driver = browser(tmp_path)
    try:
        driver.get(page.address)
        wait_for(driver, lambda d: progress(d).startswith("0 of 5"))
        for n in range(1, 6):
            if "<script>" in driver.find_element(By.ID, "text").text:
                break
            driver.find_element(By.TAG_NAME, "body").send_keys("s")
            wait_for(driver, lambda d, n=n: progress(d).startswith(f"{n} of 5"))
        text = driver.find_element(By.ID, "text").text
        assert text.startswith("<script>window.pwned = 1; alert('x')</script> We study <b>bold</b>")
        assert driver.find_element(By.ID, "title").text == MARKUP_TITLE
        assert not driver.find_elements(By.CSS_SELECTOR, "#text script, #text b, #title img")
        assert driver.execute_script("return window.pwned === undefined")
    finally:
        driver.quit()
        page.stop()


def test_the_address_without_its_token_is_refused(project, tmp_path):
    page = Page(project)
    driver = browser(tmp_path)
    try:
        driver.get(page.address.split("?")[0])
        assert "forbidden" in driver.find_element(By.TAG_NAME, "body").text
        driver.get(page.address.replace(page.token, page.token[::-1]))
        assert "forbidden" in driver.find_element(By.TAG_NAME, "body").text
        driver.get(page.address)  # with it: the page
        wait_for(driver, lambda d: progress(d).startswith("0 of "))
    finally:
        driver.quit()
        page.stop()


def screenshots(folder, out, tmp_path, areas: dict[str, str]) -> list:
    """Screenshots of the page (after two answers, each the area the reader gave the abstract,
    by its id in ``areas``, or a skip for one that fits no area) and of its report, for the docs (see tests/screenshots.py); the
    files written are returned."""
    page = Page(folder, "--n", "8", pile="papers.jsonl")
    driver = browser(tmp_path, 1200, 1000)
    try:
        driver.get(page.address)
        wait_for(driver, lambda d: progress(d).startswith("0 of 8"))
        keys = area_keys(driver)
        for n in (1, 2):
            shown = driver.find_element(By.ID, "where").text.rsplit("id ", 1)[1]
            driver.find_element(By.TAG_NAME, "body").send_keys(keys.get(areas[shown], "s"))  # none: skip
            wait_for(driver, lambda d, n=n: progress(d).startswith(f"{n} of 8"))
        time.sleep(0.3)
        written = [out / "labelling-page.png"]
        driver.save_screenshot(str(written[0]))
        driver.set_window_size(1100, 2600)
        driver.get(page.address.replace("/?", "/report?"))
        written.append(out / "report.png")
        driver.save_screenshot(str(written[1]))
        return written
    finally:
        driver.quit()
        page.stop()


def test_two_tabs_bind_every_answer_and_undo_to_the_abstract_they_show(project, tmp_path):
    """Tab A and tab B show the same abstract. B labels it; A's key press, meant for that
    abstract, is refused (A shows the next one and says so), and nothing lands on an abstract
    nobody was shown. A key held down labels one abstract, not the queue."""
    from selenium.webdriver.common.action_chains import ActionChains

    before = label_rows(project)
    with labelling_page(project, tmp_path) as (page, driver):
        tab_a = driver.current_window_handle
        driver.switch_to.new_window("tab")
        driver.get(page.address)
        wait_for(driver, lambda d: progress(d).startswith("0 of 5"))
        keys = area_keys(driver)
        driver.find_element(By.TAG_NAME, "body").send_keys(keys["theory"])  # tab B answers
        wait_for(driver, lambda d: progress(d).startswith("1 of 5"))
        driver.switch_to.window(tab_a)  # still showing the first abstract
        assert progress(driver).startswith("0 of 5")
        driver.find_element(By.TAG_NAME, "body").send_keys(keys["vision"])
        wait_for(driver, lambda d: "not saved" in d.find_element(By.ID, "feedback").text)
        assert progress(driver).startswith("1 of 5")  # it shows what is current now
        assert [row["area"] for row in label_rows(project)[len(before) :]] == ["theory"]
        # A key held down: the first press answers, the repeats are ignored.
        ActionChains(driver).key_down(keys["robotics"]).pause(0.1).perform()
        for _ in range(5):
            driver.execute_script(
                "document.dispatchEvent(new KeyboardEvent('keydown', {key: arguments[0], repeat: true}))",
                keys["robotics"],
            )
        ActionChains(driver).key_up(keys["robotics"]).perform()
        wait_for(driver, lambda d: progress(d).startswith("2 of 5"))
        time.sleep(0.5)
        assert [row["area"] for row in label_rows(project)[len(before) :]] == ["theory", "robotics"]
        assert progress(driver).startswith("2 of 5")


def test_two_annotators_on_one_page_server_each_label_as_themselves(project, tmp_path):
    """Each link labels as its own annotator: ana's answers and undo are hers, ben's progress
    his own, and each page says who is labelling."""
    before = label_rows(project)
    page = Page(project, "--n", "4", people=("ana", "ben"))
    driver = browser(tmp_path)
    try:
        driver.get(page.addresses["ana"])
        wait_for(driver, lambda d: progress(d).startswith("0 of 2"))
        assert "labelling as ana" in driver.find_element(By.ID, "source").text
        ana_tab = driver.current_window_handle
        driver.find_element(By.TAG_NAME, "body").send_keys(area_keys(driver)["robotics"])
        wait_for(driver, lambda d: progress(d).startswith("1 of 2"))
        driver.switch_to.new_window("tab")
        driver.get(page.addresses["ben"])
        wait_for(driver, lambda d: progress(d).startswith("0 of 2 · 0 labelled"))
        assert "labelling as ben" in driver.find_element(By.ID, "source").text
        assert driver.find_element(By.ID, "undo").get_attribute("disabled")  # nothing of his to undo
        driver.find_element(By.TAG_NAME, "body").send_keys("n")
        wait_for(driver, lambda d: progress(d).startswith("1 of 2 · 1 labelled (1 no area)"))
        driver.switch_to.window(ana_tab)
        driver.find_element(By.TAG_NAME, "body").send_keys("u")
        wait_for(driver, lambda d: progress(d).startswith("0 of 2 · 0 labelled"))
        rows = label_rows(project)[len(before) :]
        assert [(r["annotator"], r["area"]) for r in rows] == [("ben", "none")]
    finally:
        driver.quit()
        status, err = page.stop()
    assert status == 0 and "ben: labelled 1 (1 fits no area), skipped 0" in err


def test_three_annotators_at_once_on_a_second_address_each_label_as_themselves(project, tmp_path):
    """``--host 127.0.0.2`` (a second address of this machine) with three annotators, each in
    their own browser at the same time, each answering every abstract (``--overlap``) with an
    area of their own: every answer is saved, under its own annotator, none lost."""
    import threading

    before = label_rows(project)
    people = {"ana": "robotics", "ben": "theory", "cy": "generative"}
    page = Page(project, "--n", "5", "--overlap", "--host", "127.0.0.2", people=tuple(people))
    drivers = {name: browser(tmp_path / name) for name in people}
    failures = []

    def label_all(name: str) -> None:
        driver = drivers[name]
        try:
            driver.get(page.addresses[name])
            wait_for(driver, lambda d: progress(d).startswith("0 of 5"))
            assert f"labelling as {name}" in driver.find_element(By.ID, "source").text
            key = area_keys(driver)[people[name]]
            for n in range(1, 6):
                driver.find_element(By.TAG_NAME, "body").send_keys(key)
                wait_for(driver, lambda d, n=n: progress(d).startswith(f"{n} of 5 · {n} labelled"))
        except Exception as error:  # (said by the test below, with the annotator's name)
            failures.append((name, repr(error)))

    try:
        assert all(address.startswith("http://127.0.0.2:") for address in page.addresses.values())
        threads = [threading.Thread(target=label_all, args=(name,)) for name in people]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=180)
        assert not failures, failures
    finally:
        for driver in drivers.values():
            driver.quit()
        status, err = page.stop()
    rows = label_rows(project)[len(before) :]
    pile = {r["abstract_id"] for r in rows}
    assert len(rows) == 15 and len(pile) == 5
    for name, area in people.items():
        mine = [r for r in rows if r["annotator"] == name]
        assert sorted(r["abstract_id"] for r in mine) == sorted(pile) and {r["area"] for r in mine} == {area}
    assert status == 0 and all(f"{name}: labelled 5" in err for name in people), err


def test_a_review_on_the_page_shows_each_annotators_answer_and_saves_the_final_label(project, tmp_path):
    from tagger.labelstore import REVIEW, ProjectLabels
    from tagger.reading import read_abstracts

    abstracts = list(read_abstracts([project / "pile.jsonl"]))[:2]
    for name, areas in (("ana", ("robotics", "theory")), ("ben", ("rl", "theory"))):
        store = ProjectLabels(project / "labels", project / "seeds", name)
        for abstract, area in zip(abstracts, areas):
            store.add(abstract, area)
    page = Page(project, "--review", "--annotator", "rita", pile="pile.jsonl")
    driver = browser(tmp_path)
    try:
        driver.get(page.address)
        wait_for(driver, lambda d: progress(d).startswith("0 of 1"))
        note = driver.find_element(By.ID, "current").text
        assert note == "annotators said ana robotics, ben rl; your answer is the final label, skip leaves it"
        driver.find_element(By.TAG_NAME, "body").send_keys(area_keys(driver)["robotics"])
        wait_for(driver, lambda d: progress(d).startswith("1 of 1"))
        finals = [r for r in label_rows(project) if r.get("role") == REVIEW]
        assert [(r["annotator"], r["area"]) for r in finals] == [("rita", "robotics")]
    finally:
        driver.quit()
        page.stop()
