"""The eval owner's first steps on a new instance, as the home page lists them: what is done, what is next.

From an empty instance to a first trustworthy gate, all in the browser: import an eval set, import
two runs of it, compare them, have a judge score them (unless they came with verdicts), sample a
campaign to check the judge against people, invite the annotators, let them label, read the judge
report and export its disagreements, and gate again now that the judge's errors are known. Each
step is done when the database shows it was; the first step not done is the next one. A read (no
writes), a handful of queries.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, F, Max
from django.urls import reverse

from evalcore.models import Comparison, EvalSet, Run
from labelstudio_lite.labelling.models import Campaign, CampaignAnnotator, ExportRecord, Item, Label


@dataclass(frozen=True)
class Step:
    """One step: what to do, whether it is done, what stands now, and where to do it."""

    key: str
    title: str
    done: bool
    detail: str
    url: str
    action: str


@dataclass(frozen=True)
class FirstSteps:
    steps: list[Step]

    @property
    def next(self) -> Step | None:
        return next((step for step in self.steps if not step.done), None)

    @property
    def finished(self) -> bool:
        return self.next is None

    @property
    def done_count(self) -> int:
        return sum(step.done for step in self.steps)


def _runs_step(evalsets: int) -> Step:
    pair = Run.objects.values("version").annotate(n=Count("pk")).order_by("-n").first()
    most = pair["n"] if pair else 0
    detail = (
        "Import what your system answered for each question: a baseline and a candidate (one row per question: "
        "retrieved ids, context, answer; claims and verdicts if a judge scored them)."
        if most == 0
        else "One run so far: import the other one of the pair (same eval set version) to compare them."
        if most == 1
        else f"{most} runs of one eval set version."
    )
    return Step("runs", "Import two runs of it", most >= 2, detail, reverse("evalcore:runs"), "Import a run")


def _judge_step() -> Step:
    judged = (
        Run.objects.filter(judge_config__isnull=False)
        .values("version", "judge_config")
        .annotate(n=Count("pk"))
        .filter(n__gte=2)
        .exists()
    )
    detail = (
        "Both runs of a pair carry one judge's verdicts, so their judge metrics compare."
        if judged
        else "To compare faithfulness and validate the judge, both runs need verdicts from one pinned judge: "
        "create a runnable judge config, then on each run's page 'Judge this run' (skip this if your runs came "
        "with verdicts from one judge)."
    )
    return Step("judge", "Have one judge score both runs", judged, detail, reverse("evalcore:judges"), "Judges")


def _campaign_steps(campaign: Campaign | None) -> list[Step]:
    campaigns_url = reverse("labelling:campaigns")
    if campaign is None:
        return [
            Step(
                "campaign",
                "Sample a campaign to check the judge against people",
                False,
                "A campaign samples a judged run's answers or claims, stratified by the judge's verdict; people "
                "label them blind to the judge.",
                campaigns_url,
                "Create a campaign",
            ),
            Step(
                "invite",
                "Invite annotators",
                False,
                "Then invite the people who label.",
                reverse("accounts:people"),
                "People",
            ),
            Step(
                "label",
                "Annotators label",
                False,
                "Their labels show on the campaign's page as they come.",
                campaigns_url,
                "Campaigns",
            ),
            Step("report", "Read the judge report and export its disagreements", False, "", campaigns_url, "Campaigns"),
        ]
    page = reverse("labelling:campaign", args=[campaign.name])
    report = reverse("labelling:report", args=[campaign.name])
    people = CampaignAnnotator.objects.filter(campaign=campaign).count()
    items = Item.objects.filter(campaign=campaign).count()
    complete = Item.objects.filter(campaign=campaign, label_count__gte=F("overlap")).count()
    exported = ExportRecord.objects.filter(campaign=campaign, kind=ExportRecord.Kind.DISAGREEMENTS).exists()
    return [
        Step(
            "campaign",
            "Sample a campaign to check the judge against people",
            True,
            f"{campaign.name}: {items} items.",
            page,
            campaign.name,
        ),
        Step(
            "invite",
            "Invite annotators",
            people > 0,
            f"{people} {'person labels' if people == 1 else 'people label'} {campaign.name}."
            if people
            else f"Nobody labels {campaign.name} yet: invite them (a one-time link or a password), straight into it.",
            reverse("accounts:people") + f"?campaign={campaign.name}",
            "Invite annotators",
        ),
        Step(
            "label",
            "Annotators label",
            items > 0 and complete == items,
            f"{complete} of {items} items fully labelled.",
            page,
            "Campaign progress",
        ),
        Step(
            "report",
            "Read the judge report and export its disagreements",
            exported,
            "Kappa and the judge's miss rate on unsupported items, with intervals; the disagreements (tuning "
            "split) go to whoever tunes the judge's prompt.",
            report,
            "Judge report",
        ),
    ]


def _gate_again_step(campaign: Campaign | None) -> Step:
    labelled = (
        Label.objects.filter(item__campaign=campaign).aggregate(last=Max("updated_at"))["last"] if campaign else None
    )
    done = bool(labelled and Comparison.objects.filter(created_at__gt=labelled).exists())
    return Step(
        "gate",
        "Gate again, with the judge's validation",
        done,
        "The gate now knows how far to trust the judge on its metrics: compare the pair again (or gate from CI "
        "with an API token).",
        reverse("evalcore:compare"),
        "Compare & gate",
    )


def first_steps() -> FirstSteps:
    """Every first step, in order, with where each stands now."""
    evalsets = EvalSet.objects.count()
    comparisons = Comparison.objects.count()
    campaign = Campaign.objects.order_by("-created_at", "-id").first()
    steps = [
        Step(
            "evalset",
            "Import an eval set",
            evalsets > 0,
            "A file of questions with their gold documents or spans; each import makes a frozen version."
            if not evalsets
            else f"{evalsets} eval set{'s' if evalsets != 1 else ''}.",
            reverse("evalcore:evalsets"),
            "Import questions",
        ),
        _runs_step(evalsets),
        Step(
            "compare",
            "Compare them and read the gate",
            comparisons > 0,
            "A paired bootstrap per metric and slice: pass, review or block, with intervals."
            if not comparisons
            else f"{comparisons} comparison{'s' if comparisons != 1 else ''}.",
            reverse("evalcore:compare"),
            "Compare & gate",
        ),
        _judge_step(),
        *_campaign_steps(campaign),
        _gate_again_step(campaign),
    ]
    return FirstSteps(steps)
