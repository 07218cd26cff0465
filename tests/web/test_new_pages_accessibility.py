"""axe-core on the pages and states issue 24 added, for each role, at desktop (1440 px) and phone (390 px) width.

Pages of an empty instance (the first steps, every empty state), the People pages with a link or a
password shown once, the API tokens page with a key shown once, the one-time link page (and a spent
link), and the labelling page's new states (open elsewhere; offline with nothing left to show).
0 critical or serious violations on each; on a phone nothing is wider than the screen. The counts
are printed, and a screenshot of each is kept in tests/browser/artifacts/.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from labelstudio_lite.accounts.services import user_invite
from tests.conftest import ARTIFACTS, log_in
from tests.factories import make_campaign, make_marked_run

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

AXE = next((Path(__file__).resolve().parents[2] / "static" / "vendor").glob("axe-core-*.min.js"))
WIDTHS = {"desktop": (1440, 900), "phone": (390, 844)}


class Checker:
    def __init__(self, width: str) -> None:
        self.width = width
        self.counts: dict[tuple[str, str], Counter] = {}
        self.rules: dict[tuple[str, str], list[str]] = {}
        self.failures: list[str] = []

    def __call__(self, page, role: str, name: str) -> None:
        page.add_script_tag(url=f"/static/vendor/{AXE.name}")
        found = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")["violations"]
        self.counts[(role, name)] = Counter(v["impact"] for v in found)
        self.rules[(role, name)] = sorted(f"{v['id']} ({v['impact']})" for v in found)
        for v in found:
            if v["impact"] in ("critical", "serious"):
                self.failures.append(f"{role} {name} {self.width}: {v['id']} {[n['target'] for n in v['nodes'][:3]]}")
        if self.width == "phone":
            overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            if overflow > 1:
                self.failures.append(f"{role} {name} phone: {overflow} px wider than the screen")
        page.screenshot(path=str(ARTIFACTS / f"new-{role}-{name}-{self.width}.png"), full_page=True)


def empty_instance_pages(check, owner, url) -> None:
    for path, name, ready in [
        ("/", "home-first-steps", ".first-steps"),
        ("/evalsets/", "evalsets-empty", "#empty-evalsets"),
        ("/runs/", "runs-empty", "#empty-runs"),
        ("/compare/", "compare-empty", "#empty-compare"),
        ("/judges/", "judges-empty", "#empty-judges"),
        ("/campaigns/", "campaigns-empty", "#empty-campaigns"),
        ("/people/", "people-only-you", "table.people"),
        ("/account/tokens/", "tokens-none", "main h1"),
    ]:
        owner.goto(url + path)
        owner.wait_for_selector(ready)
        check(owner, "owner", name)


def people_pages(check, owner, url, annotator_pk: int) -> None:
    owner.goto(url + "/people/")
    owner.fill("#id_username", "nadia")
    owner.click("main button:has-text('Invite')")
    owner.wait_for_selector(".shown-once")
    check(owner, "owner", "people-link-shown-once")
    owner.fill("#id_username", "omar")
    owner.check("input[name=access][value=password]")
    owner.click("main button:has-text('Invite')")
    owner.wait_for_selector(".shown-once")
    check(owner, "owner", "people-password-shown-once")
    owner.goto(url + f"/people/{annotator_pk}/")
    check(owner, "owner", "person")
    owner.click("button[value=reset-link]")
    owner.wait_for_selector(".shown-once")
    check(owner, "owner", "person-reset-link-shown-once")
    owner.goto(url + "/campaigns/access/")
    owner.wait_for_selector("#no-annotators")
    check(owner, "owner", "campaign-nobody-labels")


def tokens_page(check, page, role: str, url: str) -> None:
    page.goto(url + "/account/tokens/")
    page.fill("#id_name", "nightly gate")
    page.click("main button:has-text('Make a token')")
    page.wait_for_selector(".shown-once")
    check(page, role, "tokens-key-shown-once")


@pytest.mark.parametrize("width", list(WIDTHS))
def test_every_new_page_and_state_has_no_critical_or_serious_violation_for_any_role(
    width, new_page, live_server, owner, annotator, other_annotator, tmp_path, django_user_model
):
    check = Checker(width)
    w, h = WIDTHS[width]
    url = live_server.url
    owner_page = new_page(w, h)
    log_in(owner_page, url, "olivia", "owner-pass-123", "/")
    empty_instance_pages(check, owner_page, url)

    run = make_marked_run(folder=tmp_path / "run", n=12, evalset="access")
    make_campaign(run=run, name="access", overlap=1, user=owner)  # nobody labels it yet
    make_campaign(run=run, name="labelled", overlap=1, user=owner, annotators=[annotator])
    carl = django_user_model.objects.create_user("carl", password="carl-pass-123", role="annotator")
    people_pages(check, owner_page, url, carl.pk)
    tokens_page(check, owner_page, "owner", url)

    adam = new_page(w, h)
    log_in(adam, url, "adam", "annot-pass-123", "/account/tokens/")
    check(adam, "annotator", "tokens-none")
    tokens_page(check, adam, "annotator", url)
    adam.goto(url + "/label/labelled/")
    adam.wait_for_selector("#answer-form")
    second = adam.context.new_page()
    second.set_viewport_size({"width": w, "height": h})
    second.goto(url + "/label/labelled/")
    second.wait_for_selector("#take-over")
    check(second, "annotator", "labelling-open-elsewhere")
    second.close()
    adam.context.set_offline(True)
    for _ in range(13):
        if adam.locator(".panel.waiting").count():
            break
        adam.wait_for_timeout(320)
        adam.keyboard.press("s")
    adam.wait_for_selector(".panel.waiting")
    check(adam, "annotator", "labelling-offline-waiting")
    adam.context.set_offline(False)

    bea = new_page(w, h)
    log_in(bea, url, "bea", "annot-pass-456", "/")
    check(bea, "annotator", "home-no-campaign")

    anonymous = new_page(w, h)
    link = user_invite(username=f"newcomer-{width}", role="annotator").link
    anonymous.goto(url + link.path)
    anonymous.wait_for_selector("#id_new_password1")
    check(anonymous, "anonymous", "set-password")
    anonymous.fill("#id_new_password1", "short")
    anonymous.fill("#id_new_password2", "short")
    anonymous.click("main button[type=submit]")
    anonymous.wait_for_selector("main .error")
    check(anonymous, "anonymous", "set-password-refused")
    anonymous.goto(url + "/accounts/link/not-a-link/")
    check(anonymous, "anonymous", "link-not-valid")

    print(f"\naxe-core on the new pages at {width} width (critical / serious / moderate / minor):")
    for (role, name), counts in check.counts.items():
        print(
            f"  {role:<9} {name:<32} "
            + " / ".join(str(counts.get(i, 0)) for i in ("critical", "serious", "moderate", "minor"))
            + (f"  {', '.join(check.rules[(role, name)])}" if counts else "")
        )
    assert not check.failures, "\n".join(check.failures)
