"""Every page loads in Chromium under the Content-Security-Policy without a violation: htmx and the
vendored scripts are files, no page runs inline script or an inline <style> element, the charts'
styles come from a stylesheet, and the API docs page gets only the relaxations it needs."""

from __future__ import annotations

import pytest
from django.urls import URLResolver, get_resolver, reverse

from evalcore.models import Comparison, Job, Row
from evalcore.services.comparisons import compare_runs
from labelstudio_lite.accounts.services import user_invite
from labelstudio_lite.labelling.models import Label
from labelstudio_lite.labelling.services.assignment import next_item, submit_label
from tests.factories import make_marked_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} in ${e.sourceFile}:${e.lineNumber}`);
});
"""

#: Patterns that are not pages: form posts, downloads, logout; the API has its own test.
NOT_PAGES = {
    "logout": "a POST",
    "labelling:next": "a POST the label page makes (it runs here, under the page's policy)",
    "labelling:answer": "a POST",
    "labelling:preview": "a POST the campaigns page makes on load (it runs here)",
    "labelling:annotators": "a POST",
    "labelling:guideline": "a POST (the guideline's next version)",
    "labelling:leave": "a POST the labelling page sends when it closes",
    "labelling:report-publish": "a POST recording an export, then a download",
    "accounts:person-access": "a POST",
    "accounts:token-revoke": "a POST",
    "favicon": "an image, not a page",
    "labelling:export": "a POST, then a download",
    "labelling:import": "a POST",
    "labelling:export-create": "a POST",
    "labelling:export-download": "a file download, not a page",
    "labelling:verdicts": "a POST",
    "labelling:fresh-heldout": "a POST",
    "labelling:try-prompt": "a POST",
    "labelling:bias-probe-add": "a POST",
    "evalcore:rescore": "a POST",
    "evalcore:job-cancel": "a POST",
    "api-schema": "the schema (YAML), not a page",
    "healthz": "JSON for load balancers, not a page",
    "readyz": "JSON for load balancers, not a page",
    "metrics": "Prometheus text, not a page",
}


def page_patterns() -> set[str]:
    """The names of every URL pattern outside the API and the admin."""
    names: set[str] = set()

    def walk(patterns: list, namespace: str | None, prefix: str) -> None:
        for entry in patterns:
            route = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                if entry.namespace != "admin":
                    walk(entry.url_patterns, entry.namespace or namespace, route)
            elif entry.name and (not route.startswith("api/") or entry.name in ("api-docs", "api-schema")):
                names.add(f"{namespace}:{entry.name}" if namespace else entry.name)

    walk(get_resolver().url_patterns, None, "")
    return names


@pytest.mark.slow  # seconds of subprocesses or simulation: CI runs it (./dev test -m "")
def test_every_page_loads_under_the_csp_without_a_violation(
    page, live_server, small_run, tuned_campaign, owner, tmp_path
):
    campaign, verdict_set = tuned_campaign.campaign, tuned_campaign.verdict_set
    first = next_item(campaign=campaign, user=owner)
    submit_label(campaign=campaign, user=owner, item_id=first.item.pk, value="supported")
    other = make_marked_run(folder=tmp_path / "other", n=12, name="other")
    comparison: Comparison = compare_runs(base=small_run, candidate=other, user=owner, judge_policy="off").comparison
    job = Job.objects.create(kind="import_run", params={}, created_by=owner)
    row = Row.objects.filter(run=small_run).first()
    own_label = Label.objects.filter(item__campaign=campaign, annotator=owner).first()
    version = small_run.version
    pages = {
        "home": reverse("home"),
        "evalcore:evalsets": reverse("evalcore:evalsets"),
        "evalcore:version": reverse("evalcore:version", args=[version.eval_set.name, version.number]),
        "evalcore:runs": reverse("evalcore:runs"),
        "evalcore:run": reverse("evalcore:run", args=[small_run.pk]),
        "evalcore:rows": reverse("evalcore:rows", args=[small_run.pk]),
        "evalcore:row": reverse("evalcore:row", args=[small_run.pk, row.pk]),
        "evalcore:compare": reverse("evalcore:compare"),
        "evalcore:comparison": reverse("evalcore:comparison", args=[comparison.pk]),
        "evalcore:changed-rows": reverse("evalcore:changed-rows", args=[comparison.pk]),
        "evalcore:jobs": reverse("evalcore:jobs"),
        "evalcore:job": reverse("evalcore:job", args=[job.pk]),
        "labelling:mine": reverse("labelling:mine"),
        "labelling:label": reverse("labelling:label", args=[campaign.name]),
        "labelling:recent": reverse("labelling:recent", args=[campaign.name]),
        "labelling:edit": reverse("labelling:edit", args=[campaign.name, own_label.pk]),
        "labelling:campaigns": reverse("labelling:campaigns"),
        "labelling:campaign": reverse("labelling:campaign", args=[campaign.name]),
        "labelling:adjudicate": reverse("labelling:adjudicate", args=[campaign.name]),
        "labelling:report": reverse("labelling:report", args=[campaign.name]),
        "labelling:bias": reverse("labelling:bias", args=[campaign.name]),
        "labelling:remeasure": reverse("labelling:remeasure", args=[campaign.name]) + f"?verdicts={verdict_set.pk}",
        "evalcore:plan": reverse("evalcore:plan"),
        "evalcore:judges": reverse("evalcore:judges"),
        "evalcore:judge": reverse("evalcore:judge", args=[verdict_set.judge_config_id]),
        "evalcore:judge-run": reverse("evalcore:judge-run", args=[small_run.pk]),
        "api-docs": reverse("api-docs"),
        "accounts:people": reverse("accounts:people"),
        "accounts:person": reverse("accounts:person", args=[owner.pk]),
        "accounts:tokens": reverse("accounts:tokens"),
        "accounts:link": reverse("accounts:link", args=[user_invite(username="newcomer", role="annotator").link.token]),
    }
    assert set(pages) | set(NOT_PAGES) | {"login"} == page_patterns(), "a page is neither visited nor excused"

    page.context.add_init_script(RECORD_VIOLATIONS)
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.on("pageerror", lambda error: console.append(f"page error: {error}"))

    page.goto(live_server.url + reverse("login"))
    page.fill("#id_username", "olivia")
    page.fill("#id_password", "owner-pass-123")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    violations: dict[str, list[str]] = {"login": []}
    for name, url in pages.items():
        response = page.goto(live_server.url + url)
        assert response is not None and response.status == 200, (name, response and response.status)
        page.wait_for_load_state("networkidle")
        violations[name] = page.evaluate("window.__violations")
        assert "default-src 'self'" in response.headers.get("content-security-policy", ""), name

    reported = {name: found for name, found in violations.items() if found}
    csp_console = [text for text in console if "Content Security Policy" in text or "Refused to" in text]
    assert not reported and not csp_console, (reported, csp_console)
    assert not [text for text in console if text.startswith("page error")], console
