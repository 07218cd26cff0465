"""Every page, for each role, at desktop (1280 px) and phone (390 px) width, checked by axe-core in Chromium.

axe-core is vendored from its npm package (``static/vendor/axe-core-*.min.js``, no CDN) and injected
into each page. Any violation of impact ``critical`` or ``serious`` fails the test; the counts per
page (all impacts) are printed. The page list must cover every page of the site: a new URL
pattern fails :func:`test_every_page_of_the_site_is_checked` until it is added to ``PAGES`` or to
``NOT_PAGES`` with the reason.

On a phone the checks add what axe cannot see: nothing is wider than the screen (no sideways
scrolling of the page itself), and the top bar's menu stays on screen.
"""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver

from evalcore.models import EvalSetVersion, Job, Row, Run
from evalcore.services.comparisons import compare_runs
from labelstudio_lite.accounts.services import user_invite
from labelstudio_lite.labelling.models import Campaign, Label, VerdictSet
from labelstudio_lite.labelling.services.assignment import next_item, submit_label
from tests.conftest import ARTIFACTS, log_in

AXE = next((Path(__file__).resolve().parents[2] / "static" / "vendor").glob("axe-core-*.min.js"))
FAILING = ("critical", "serious")
WIDTHS = {"desktop": (1280, 800), "phone": (390, 844)}
OWNER = ("owner", "owner-demo-pass")
ANNOTATOR = ("ann1", "ann1-demo-pass")


@dataclass(frozen=True)
class Page:
    name: str  # the URL pattern it shows (for the coverage check), or a name of our own
    path: str  # "{...}" filled from the world
    role: str  # "owner", "annotator" or "anonymous"
    ready: str = "main"  # a selector to wait for before checking
    action: str = ""  # a key to press before checking (the shortcut list)


PAGES = [
    Page("login", "/accounts/login/", "anonymous"),
    Page("home", "/", "annotator", ".campaign-entry"),
    Page("labelling:mine", "/label/", "annotator", ".campaign-entry"),
    Page("labelling:label", "/label/demo-claims/", "annotator", "#answer-form"),
    Page("labelling:label (shortcut list open)", "/label/demo-claims/", "annotator", "#answer-form", action="?"),
    Page("labelling:recent", "/label/demo-claims/recent/", "annotator"),
    Page("labelling:edit", "/label/demo-claims/labels/{label}/", "annotator", "#change-form"),
    Page("403 (an annotator on an owner's page)", "/runs/", "annotator"),
    Page("404 (a campaign not assigned)", "/label/faithfulness-claims/", "annotator"),
    Page("home", "/", "owner", ".attention"),
    Page("evalcore:evalsets", "/evalsets/", "owner"),
    Page("evalcore:version", "/evalsets/support-qa/v1/", "owner"),
    Page("evalcore:runs", "/runs/", "owner"),
    Page("evalcore:runs (back from a failed import)", "/runs/?retry={failed_job}", "owner", "#retry-problems"),
    Page("evalcore:run", "/runs/{run}/", "owner"),
    Page("evalcore:rows", "/runs/{run}/rows/", "owner"),
    Page("evalcore:row", "/runs/{run}/rows/{row}/", "owner"),
    Page("evalcore:compare", "/compare/", "owner"),
    Page("evalcore:comparison", "/comparisons/{comparison}/", "owner"),
    Page("evalcore:changed-rows", "/comparisons/{comparison}/changed/", "owner"),
    Page("evalcore:jobs", "/jobs/", "owner"),
    Page("evalcore:plan", "/plan/", "owner"),
    Page("evalcore:judges", "/judges/", "owner"),
    Page("evalcore:judge", "/judges/{judge}/", "owner"),
    Page("evalcore:judge-run", "/runs/{run}/judge/", "owner"),
    Page("evalcore:job", "/jobs/{failed_job}/", "owner"),
    Page("evalcore:job (done)", "/jobs/{job}/", "owner"),
    Page("labelling:campaigns", "/campaigns/", "owner"),
    Page("labelling:campaign", "/campaigns/faithfulness-claims/", "owner"),
    Page("labelling:adjudicate", "/campaigns/demo-claims/adjudicate/", "owner"),
    Page("labelling:report", "/campaigns/faithfulness-claims/report/", "owner"),
    Page("labelling:bias", "/campaigns/faithfulness-claims/bias/", "owner", "#probes"),
    Page("labelling:remeasure", "/campaigns/faithfulness-claims/remeasure/?verdicts={verdicts}", "owner"),
    Page("accounts:people", "/people/", "owner"),
    Page("accounts:person", "/people/{ann1}/", "owner"),
    Page("accounts:tokens", "/account/tokens/", "owner"),
    Page("accounts:tokens", "/account/tokens/", "annotator"),
    Page("403 (an annotator on the People page)", "/people/", "annotator"),
    Page("accounts:link", "/accounts/link/{link}/", "anonymous", "#id_new_password1"),
    Page("api-docs", "/api/docs/", "owner", "h1"),
    Page("404 (no such page)", "/no/such/page/", "owner"),
]

# URL patterns that are not pages (they answer POSTs, downloads, JSON or redirects), with the reason.
NOT_PAGES = {
    "logout": "a POST that logs out",
    "labelling:next": "the labelling page's own POST for its items",
    "labelling:answer": "the labelling page's own POST for an answer",
    "labelling:leave": "the labelling page's own POST when it closes",
    "labelling:preview": "a POST returning the strata preview fragment",
    "labelling:annotators": "a POST",
    "labelling:guideline": "a POST (the guideline's next version)",
    "labelling:export": "a POST recording an export, then a download",
    "labelling:report-publish": "a POST recording an export, then a download (a self-contained page checked in test_published_report)",
    "labelling:export-create": "a POST recording an export",
    "labelling:export-download": "a file download",
    "labelling:import": "a POST (an upload)",
    "labelling:verdicts": "a POST (an upload)",
    "labelling:fresh-heldout": "a POST",
    "api-schema": "the OpenAPI schema (YAML)",
    "evalcore:job-cancel": "a POST that cancels a job",
    "evalcore:rescore": "a POST that starts re-scoring a baseline",
    "labelling:try-prompt": "a POST that starts trying a prompt on the disagreements",
    "labelling:bias-probe-add": "a POST that adds a bias probe, back to the bias battery page",
    "accounts:person-access": "a POST (deactivate, reset, invite again)",
    "accounts:token-revoke": "a POST that revokes a token",
    "favicon": "an image",
    "healthz": "JSON for load balancers",
    "readyz": "JSON for load balancers",
    "metrics": "Prometheus text for a scraper",
}


def site_pattern_names() -> set[str]:
    """Every named URL pattern of the site outside the API and the admin."""
    names: set[str] = set()

    def walk(patterns: list, namespace: str | None, prefix: str) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                if entry.namespace != "admin":
                    walk(entry.url_patterns, entry.namespace or namespace, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern) and entry.name:
                name = f"{namespace}:{entry.name}" if namespace else entry.name
                if not (prefix + str(entry.pattern)).startswith("api/") or name in ("api-docs", "api-schema"):
                    names.add(name)

    walk(get_resolver().url_patterns, None, "")
    return names


def test_every_page_of_the_site_is_checked():
    covered = {page.name.split(" (")[0] for page in PAGES}
    unclassified = site_pattern_names() - covered - set(NOT_PAGES)
    assert not unclassified, f"add these pages to PAGES (or to NOT_PAGES with the reason): {sorted(unclassified)}"


@pytest.fixture
def world(settings, tmp_path):
    """The demo (eval set, runs, campaigns, labels, a tuned judge's verdicts), a comparison, jobs, a conflict."""
    settings.VAR_DIR = tmp_path / "var"
    settings.GATE_ITERATIONS = 200
    call_command("load_demo", stdout=io.StringIO())
    run = Run.objects.get(name="chunks-256-rerank")
    comparison = compare_runs(base=Run.objects.get(name="chunks-512"), candidate=run).comparison
    open_campaign = Campaign.objects.get(name="demo-claims")
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    ann1, ann2 = users.get(username="ann1"), users.get(username="ann2")
    first = next_item(campaign=open_campaign, user=ann1)
    label = submit_label(campaign=open_campaign, user=ann1, item_id=first.item.pk, value="supported", rationale="ok")
    assert next_item(campaign=open_campaign, user=ann2).item.pk == first.item.pk
    submit_label(campaign=open_campaign, user=ann2, item_id=first.item.pk, value="unsupported")  # a conflict
    failed = Job.objects.create(
        kind="import_run",
        status=Job.Status.FAILED,
        params={"path": "x", "evalset": "support-qa@1", "name": "chunks-128", "display_name": "rows.jsonl", "k": 5},
        result={"problems": [{"file": "rows.jsonl", "line": 3, "field": "retrieved", "message": "must be a list"}]},
        error="Nothing was imported: 1 problem",
    )
    done = Job.objects.create(
        kind="import_run", status=Job.Status.SUCCEEDED, result={"message": "Imported.", "run_id": run.pk}
    )
    assert EvalSetVersion.objects.filter(eval_set__name="support-qa", number=1).exists()
    return SimpleNamespace(
        run=run.pk,
        row=Row.objects.filter(run=run).order_by("pk").first().pk,
        comparison=comparison.pk,
        label=label.pk,
        failed_job=failed.pk,
        job=done.pk,
        verdicts=VerdictSet.objects.get(campaign__name="faithfulness-claims").pk,
        judge=run.judge_config_id,
        ann1=ann1.pk,
        link=user_invite(username="newcomer", role="annotator").link.token,
    )


def check(page, url: str, spec: Page, width: str) -> tuple[list[dict], list[str]]:
    """Open ``url``, run axe on it; return its violations and what the phone checks found."""
    page.goto(url)
    try:
        page.wait_for_selector(spec.ready)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "a11y-timeout.png"), full_page=True)
        print("TIMEOUT", url, page.content()[:2000])
        raise
    if spec.action:
        page.wait_for_timeout(400)
        page.keyboard.press(spec.action)
        page.wait_for_selector("dialog[open]")
    # by URL, from our own static files: an inline copy would be refused by the page's CSP
    page.add_script_tag(url=f"/static/vendor/{AXE.name}")
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    problems = []
    if width == "phone":
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        if overflow > 1:
            problems.append(f"the page is {overflow} px wider than the screen")
        off_screen = page.evaluate("""() => [...document.querySelectorAll('.topbar a, .topbar button')]
            .filter(el => el.offsetParent !== null)
            .filter(el => { const r = el.getBoundingClientRect(); return r.right > window.innerWidth + 1 || r.left < -1; })
            .map(el => el.textContent.trim())""")
        if off_screen:
            problems.append(f"top bar items off screen: {off_screen}")
    slug = spec.name.replace(":", "-").replace(" ", "_").replace("(", "").replace(")", "")
    page.screenshot(path=str(ARTIFACTS / f"a11y-{spec.role}-{slug}-{width}.png"), full_page=True)
    return result["violations"], problems


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_no_page_has_a_critical_or_serious_accessibility_violation_for_any_role_or_width(new_page, live_server, world):
    counts: dict[tuple[str, str, str], Counter] = {}
    rules: dict[tuple[str, str, str], list[str]] = {}
    failures = []
    for width, (w, h) in WIDTHS.items():
        pages = {"anonymous": new_page(w, h)}
        for role, (username, password) in (("owner", OWNER), ("annotator", ANNOTATOR)):
            pages[role] = new_page(w, h)
            log_in(pages[role], live_server.url, username, password, "/")
        for spec in PAGES:
            url = live_server.url + spec.path.format(**vars(world))
            violations, problems = check(pages[spec.role], url, spec, width)
            counts[(spec.role, spec.name, width)] = Counter(v["impact"] for v in violations)
            rules[(spec.role, spec.name, width)] = sorted(f"{v['id']} ({v['impact']})" for v in violations)
            for v in violations:
                if v["impact"] in FAILING:
                    targets = ", ".join(str(n["target"]) for n in v["nodes"][:3])
                    failures.append(
                        f"{spec.role} {spec.name} {width}: {v['impact']} {v['id']} ({v['help']}): {targets}"
                    )
            failures.extend(f"{spec.role} {spec.name} {width}: {p}" for p in problems)

    print("\naxe-core violations per page (critical / serious / moderate / minor):")
    for (role, name, width), counter in counts.items():
        print(
            f"  {role:<9} {width:<7} {name:<50} "
            + " / ".join(str(counter.get(i, 0)) for i in ("critical", "serious", "moderate", "minor"))
            + (f"  {', '.join(rules[(role, name, width)])}" if counter else "")
        )
    assert not failures, "\n".join(failures)
    assert Label.objects.exists()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_api_docs_page_loads_nothing_from_the_internet(page, live_server, owner):
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    log_in(page, live_server.url, "olivia", "owner-pass-123", "/api/docs/")
    page.wait_for_selector("h1")
    page.wait_for_timeout(500)

    outside = [url for url in requested if not url.startswith((live_server.url, f"blob:{live_server.url}", "data:"))]
    assert not outside, f"the API docs page fetched {outside}"
    assert page.get_attribute("html", "lang") == "en"
    assert any("/static/" in url and "swagger-ui" in url for url in requested)
