"""From an empty instance to a first gate, in the browser only (headless Chromium), against the fake judge.

The one step outside the browser is the operator's (docs/deploy.md, step 4): the first eval owner.
Then the owner follows the home page's first steps and every page's empty state: imports an eval
set and two runs, compares them, has the fake judge score both, samples a campaign, invites an
annotator (a one-time link), who sets a password and labels every item with the keyboard; the
owner reads the judge report, exports its disagreements and gates again, and the gate now knows
what the judge misses. axe-core checks every page on the way (0 critical or serious); the steps
walked and the counts are printed.

Written to be extended: each step is a function of the walk; a campaign of another judge metric
(issue 20's kinds) is one more ``campaign`` step with its own labels.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from evalcore.models import Comparison, EvalSet, Run
from labelstudio_lite.accounts.services import user_save
from labelstudio_lite.labelling.models import Campaign, ExportRecord, Label
from tests.conftest import ARTIFACTS, log_in
from tests.labelling.browser import item_id, press, wait_for_next_item, wait_until_sent

from .first_run import judge_config, truth, write_files

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

AXE = next((Path(__file__).resolve().parents[2] / "static" / "vendor").glob("axe-core-*.min.js"))


@dataclass
class Walk:
    """The owner's and the annotator's pages, the steps walked and what axe found on each page."""

    url: str
    owner: object
    files: dict[str, Path]
    annotator: object = None
    steps: list[str] = field(default_factory=list)
    axe: dict[tuple[str, str], Counter] = field(default_factory=dict)

    def step(self, words: str) -> None:
        self.steps.append(words)

    def check(self, page, role: str, name: str) -> None:
        """axe on the page as it is now; a screenshot for the record."""
        page.add_script_tag(url=f"/static/vendor/{AXE.name}")
        found = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")["violations"]
        self.axe[(role, name)] = Counter(v["impact"] for v in found)
        page.screenshot(path=str(ARTIFACTS / f"first-run-{len(self.axe):02d}-{role}-{name}.png"), full_page=True)
        bad = [
            f"{v['id']}: {v['help']} {[n['target'] for n in v['nodes'][:3]]}"
            for v in found
            if v["impact"] in ("critical", "serious")
        ]
        assert not bad, f"{role} {name}: {bad}"

    def home_next(self, key: str) -> None:
        """Back on the home page: the step ``key`` is the one marked next; follow its button."""
        self.owner.click("a.brand")
        self.owner.wait_for_selector(f'li[data-step="{key}"][aria-current="step"]')
        self.owner.click(f'li[data-step="{key}"] a.button')


def text(page, selector: str = "main") -> str:
    return re.sub(r"\s+", " ", page.inner_text(selector))


def choose(page, select: str, words: str) -> None:
    """Choose the option of ``select`` whose text holds ``words`` (the only one)."""
    values = page.eval_on_selector(
        select, "(s, w) => [...s.options].filter(o => o.text.includes(w)).map(o => o.value)", words
    )
    assert len(values) == 1, (select, words, values)
    page.select_option(select, values[0])


def wait_for_job(page) -> str:
    try:
        page.wait_for_selector("#job-progress .verdict", timeout=60_000)
    except Exception:
        print("JOB PAGE", page.url, text(page))
        raise
    words = text(page, "#job-progress")
    assert words.startswith("Done."), words
    return words


# ----------------------------------------------------------------------------------------------
# The steps
# ----------------------------------------------------------------------------------------------


def import_questions(walk: Walk) -> None:
    page = walk.owner
    assert "Getting started: 0 of 9 done" in text(page)
    walk.check(page, "owner", "home-empty")
    walk.home_next("evalset")
    assert "Start here: import your questions" in text(page)
    walk.check(page, "owner", "evalsets-empty")
    page.set_input_files("#id_file", str(walk.files["questions"]))
    page.fill("#id_name", "support-qa")
    page.click("text=Import as a new version")
    assert "60 questions" in wait_for_job(page)
    walk.step("imported the eval set support-qa (60 questions) on the Eval sets page")


def import_runs(walk: Walk) -> None:
    page = walk.owner
    walk.home_next("runs")
    assert "Import what your system answered" in text(page) and "support-qa" in text(page, "#empty-runs")
    walk.check(page, "owner", "runs-empty")
    for name in ("base", "candidate"):
        page.goto(walk.url + "/runs/")
        page.set_input_files("#id_file", str(walk.files[name]))
        page.fill("#id_evalset", "support-qa")
        page.fill("#id_name", walk.files[name].stem)
        page.click("text=Import and score")
        wait_for_job(page)
    assert Run.objects.count() == 2
    walk.step("imported two runs of it, chunks-512 and chunks-256, on the Runs page (no judge verdicts)")


def compare_first(walk: Walk) -> None:
    page = walk.owner
    walk.home_next("compare")
    choose(page, "#id_base", "chunks-512")
    choose(page, "#id_candidate", "chunks-256")
    page.click("text=Run the gate")
    page.wait_for_selector("h1")
    if "/jobs/" in page.url:
        wait_for_job(page)
        page.click("text=Open the result")
    assert "/comparisons/" in page.url
    walk.check(page, "owner", "comparison-retrieval")
    walk.step("compared them on Compare & gate: retrieval metrics only (no judge yet)")


def judge_both(walk: Walk, judge_url: str) -> None:
    page = walk.owner
    walk.home_next("judge")
    assert "A judge the tool can call" in text(page)
    walk.check(page, "owner", "judges-empty")
    page.fill("#id_config", judge_config(judge_url))
    page.click("main button:has-text('Create')")
    page.wait_for_url(re.compile(r"/judges/\d+/$"))
    for run in ("chunks-512", "chunks-256"):
        page.goto(walk.url + "/runs/")
        page.click(f"a:text-is('{run}')")
        page.click("text=Judge this run with a config")
        choose(page, "form[method=get] #id_judge_config", "literal-judge-v1")  # 1. the estimate first
        page.select_option("form[method=get] #id_claims", "split")
        page.click("text=Estimate the cost")
        assert "calls" in text(page, "#estimate")
        assert page.eval_on_selector("form[method=post] #id_claims", "s => s.value") == "split"
        page.click("text=Judge the run")  # 2. start, with what was estimated
        wait_for_job(page)
    assert Run.objects.filter(judge_config__name="literal-judge-v1").count() == 2
    walk.step(
        "created a runnable judge config on the Judges page (the fake judge) and judged both runs from their pages"
    )


def create_campaign(walk: Walk) -> str:
    page = walk.owner
    walk.home_next("campaign")
    assert "Check the judge against people" in text(page)
    page.fill("#id_name", "faith-first")
    choose(page, "#id_run", "chunks-256-by-literal-judge-v1")
    page.select_option("#id_unit", "claim")
    page.fill("#id_size", "60")
    page.click("main button.primary:has-text('Create')")
    page.wait_for_url(re.compile(r"/campaigns/faith-first/$"))
    assert "Nobody labels this campaign yet" in text(page)
    walk.check(page, "owner", "campaign-no-annotators")
    walk.step("sampled the faithfulness campaign faith-first (60 claims of the judged candidate) on Campaigns")
    return "faith-first"


def invite_annotator(walk: Walk, new_page) -> None:
    page = walk.owner
    walk.home_next("invite")
    assert page.is_checked("input[name=access][value=link]")
    assert page.eval_on_selector("#id_campaigns", "s => [...s.selectedOptions].map(o => o.text)") == ["faith-first"]
    page.fill("#id_username", "nadia")
    page.click("main button:has-text('Invite')")
    page.wait_for_selector(".shown-once")
    link = page.input_value("#secret-value")
    assert "/accounts/link/" in link and "nadia labels faith-first" in text(page)
    walk.check(page, "owner", "people-link-shown-once")
    walk.step("invited the annotator nadia on People with a one-time link, straight into faith-first")

    walk.annotator = annotator = new_page(1440, 900)
    annotator.goto(link)
    walk.check(annotator, "anonymous", "set-password")
    annotator.fill("#id_new_password1", "nadias-own-pass")
    annotator.fill("#id_new_password2", "nadias-own-pass")
    annotator.click("text=Set my password and log in")
    annotator.wait_for_selector(".campaign-entry")
    walk.check(annotator, "annotator", "home")
    walk.step("nadia opened the link, set her password and was logged in, her campaign on her home page")


def label_everything(walk: Walk) -> None:
    page = walk.annotator
    page.keyboard.press("Enter")  # "Start labelling" has the focus
    page.wait_for_selector("#answer-form")
    walk.check(page, "annotator", "labelling")
    said = truth()
    answered = 0
    while not page.locator(".panel.done").count():
        claim = page.inner_text(".claim-text").strip()
        shown = item_id(page)
        press(page, "s" if said[claim] else "u")
        wait_for_next_item(page, shown)
        answered += 1
        assert answered <= 60
    wait_until_sent(page)
    assert Label.objects.filter(annotator__username="nadia").count() == answered == 60
    walk.step(f"nadia labelled all {answered} claims with the keyboard (S and U), blind to the judge")


def read_report_and_export(walk: Walk) -> None:
    page = walk.owner
    walk.home_next("report")
    verdict = text(page, "#verdict-line")
    assert "not fit to gate" in verdict and "miss" in verdict
    assert text(page, "h1").startswith("60 labelled")
    walk.check(page, "owner", "judge-report")
    page.click("#exports button[type=submit]")
    page.wait_for_selector("#exports table")
    with page.expect_download() as download:
        page.click("#exports table a")
    lines = [json.loads(line) for line in Path(download.value.path()).read_text().splitlines() if line.strip()]
    assert lines and ExportRecord.objects.filter(kind="disagreements").count() == 1
    assert all("refunds within thirty days" in json.dumps(line) for line in lines)  # the judge's misses
    walk.step(f"read the judge report ({verdict[:80]}…) and exported {len(lines)} disagreements (tuning split)")


def gate_again(walk: Walk) -> None:
    page = walk.owner
    before = Comparison.objects.count()
    walk.home_next("gate")
    choose(page, "#id_base", "chunks-512-by-literal-judge-v1")
    choose(page, "#id_candidate", "chunks-256-by-literal-judge-v1")
    page.click("text=Run the gate")
    if "/jobs/" in page.url:
        wait_for_job(page)
        page.click("text=Open the result")
    page.wait_for_url(re.compile(r"/comparisons/\d+/$"))
    assert Comparison.objects.count() == before + 1
    judge = text(page, ".judge-fitness")
    assert "never validated" not in judge and "faith-first" in page.content()
    walk.check(page, "owner", "gate-with-validation")
    walk.step(f"gated again: faithfulness now weighed with the judge's validation ({judge[:90]}…)")
    page.click("a.brand")
    assert "Getting started" not in text(page)  # every first step done


# ----------------------------------------------------------------------------------------------
# The walk
# ----------------------------------------------------------------------------------------------


def test_an_eval_owner_goes_from_an_empty_instance_to_a_first_gate_in_the_browser(
    new_page, live_server, fake_judge, tmp_path, settings
):
    settings.GATE_ITERATIONS = 2000
    assert not EvalSet.objects.exists() and not Run.objects.exists() and not Campaign.objects.exists()
    user_save(username="olga", role="owner", password="olgas-pass-phrase")  # the operator's one step
    owner = new_page(1440, 900)
    log_in(owner, live_server.url, "olga", "olgas-pass-phrase", "/")
    walk = Walk(url=live_server.url, owner=owner, files=write_files(tmp_path / "files"))
    walk.step("the operator created the first eval owner, olga (docs/deploy.md step 4); she logged in")

    import_questions(walk)
    import_runs(walk)
    compare_first(walk)
    judge_both(walk, fake_judge.base_url)
    create_campaign(walk)
    invite_annotator(walk, new_page)
    label_everything(walk)
    read_report_and_export(walk)
    gate_again(walk)

    print("\nThe first-run walk:")
    for n, words in enumerate(walk.steps, start=1):
        print(f"  {n:>2}. {words}")
    print("axe-core per page (critical / serious / moderate / minor):")
    for (role, name), counts in walk.axe.items():
        print(
            f"  {role:<9} {name:<28} "
            + " / ".join(str(counts.get(i, 0)) for i in ("critical", "serious", "moderate", "minor"))
        )
    assert len(fake_judge.fake.requests) > 0
