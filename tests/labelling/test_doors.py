"""Every door of the labelling app that hands out people's labels records an export.

The judge report's leakage warning is only as good as the records: a page, an endpoint or a
command that returns labels of held-out items without an :class:`ExportRecord` makes the warning
lie. So every URL pattern of the app (walked from the resolver) and every management command of
the app must be classified below, and each is called as an eval owner (who is also one of the
campaign's annotators, so the labelling doors answer too): the doors listed as exporting must
record an export, every other door must record none. A new pattern, a new method on a pattern
or a new command fails :func:`test_every_door_of_the_labelling_app_is_classified` until it is
added here, with a decision.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command, get_commands
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from evalcore.services.judge_configs import judge_config_create
from labelstudio_lite.labelling.models import Campaign, ExportRecord, Item
from labelstudio_lite.labelling.services.assignment import next_item, submit_label
from labelstudio_lite.labelling.services.exports import disagreements_export
from labelstudio_lite.labelling.services.remeasure import remeasurement_open
from tests.factories import JUDGE, import_verdicts, label_items, qid_of, runnable_judge
from tests.files import write_csv, write_jsonl

from .snapshots import labelling_state

APP = "labelstudio_lite.labelling"
TUNED = {**JUDGE, "prompt": JUDGE["prompt"] + "\nTuned."}


@dataclass(frozen=True)
class Door:
    """How to call one method of one URL pattern, and whether it hands out labels (so must record an export)."""

    exports: bool
    why: str
    kwargs: dict[str, str] = field(default_factory=dict)  # URL arguments, "{name}" filled from the world
    data: dict[str, Any] = field(default_factory=dict)
    query: str = ""


# Which doors hand out people's labels (held-out items included, or the tuning split's disagreements).
EXPORTS = "returns people's labels: records an export"
LABEL_PAGES = "the annotator's own item or labels, blind (no one else's labels, no held-out set leaves)"
OWNER_READS = "aggregates (counts, agreement, kappa, miss rates) or settings, not labels"
WRITES = "takes input, returns a redirect or a status: no labels leave"
TRY_PROMPT = "a new judge config judges the held-out items (their labels never enter a prompt): no labels leave"
STRICT = "Be strict.\nContext:\n{context}\nClaim: {claim}"
BIAS = "judges the tuning items' claims under bias probes (labels never enter a prompt); its findings are aggregates"
REMEASURE_OPEN = "opens the re-measurement (recorded as looked at: tuning again spends the held-out split); its numbers are aggregates"

DOORS: dict[tuple[str, str], Door] = {
    # the annotators' labelling pages and API
    ("labelling:mine", "GET"): Door(False, LABEL_PAGES),
    ("labelling:label", "GET"): Door(False, LABEL_PAGES, {"name": "{campaign}"}),
    ("labelling:next", "POST"): Door(False, LABEL_PAGES, {"name": "{campaign}"}),
    ("labelling:answer", "POST"): Door(
        False, LABEL_PAGES, {"name": "{campaign}"}, {"item_id": "{held}", "value": "supported"}
    ),
    ("labelling:leave", "POST"): Door(False, WRITES, {"name": "{campaign}"}, {"page": "tab-0123456789"}),
    ("labelling:recent", "GET"): Door(False, LABEL_PAGES, {"name": "{campaign}"}),
    ("labelling:edit", "GET"): Door(False, LABEL_PAGES, {"name": "{campaign}", "label_id": "{label}"}),
    ("labelling:edit", "POST"): Door(
        False, LABEL_PAGES, {"name": "{campaign}", "label_id": "{label}"}, {"value": "unsupported"}
    ),
    ("api-my-campaigns", "GET"): Door(False, LABEL_PAGES),
    ("api-next", "POST"): Door(False, LABEL_PAGES, {"name": "{campaign}"}),
    ("api-my-labels", "GET"): Door(False, LABEL_PAGES, {"name": "{campaign}"}),
    ("api-my-labels", "POST"): Door(
        False, LABEL_PAGES, {"name": "{campaign}"}, {"item_id": "{held}", "value": "supported"}
    ),
    ("api-skip", "POST"): Door(False, LABEL_PAGES, {"name": "{campaign}"}, {"item_id": "{held}"}),
    # the eval owners' campaign pages
    ("labelling:campaigns", "GET"): Door(False, OWNER_READS),
    ("labelling:campaigns", "POST"): Door(
        False,
        WRITES,
        data={
            "name": "doors-new",
            "run": "{run}",
            "unit": "answer",
            "size": "4",
            "heldout_fraction": "0.5",
            "overlap": "1",
            "seed": "7",
        },
    ),
    ("labelling:preview", "POST"): Door(
        False,
        OWNER_READS,
        data={"run": "{run}", "unit": "answer", "size": "4", "heldout_fraction": "0.5", "overlap": "1", "seed": "7"},
    ),
    ("labelling:campaign", "GET"): Door(False, OWNER_READS, {"name": "{campaign}"}),
    ("labelling:annotators", "POST"): Door(False, WRITES, {"name": "{campaign}"}, {"annotators": ["{bea}"]}),
    ("labelling:guideline", "POST"): Door(False, WRITES, {"name": "{campaign}"}, {"text": "doors guideline v2"}),
    ("labelling:adjudicate", "GET"): Door(
        False,
        "shows the labels of items people disagree on, on screen, to decide their final label (held-out items "
        "need one too); nothing is downloaded",
        {"name": "{campaign}"},
    ),
    ("labelling:adjudicate", "POST"): Door(
        False, WRITES, {"name": "{campaign}"}, {"item_id": "{held}", "value": "supported"}
    ),
    ("labelling:export", "POST"): Door(True, EXPORTS, {"name": "{campaign}", "fmt": "csv"}),
    ("labelling:report-publish", "POST"): Door(True, EXPORTS, {"name": "{campaign}", "fmt": "html"}),
    ("labelling:import", "POST"): Door(False, WRITES, {"name": "{campaign}"}, {"file": "{labels_file}"}),
    # the judge report, re-measurement and disagreement exports
    ("labelling:report", "GET"): Door(False, OWNER_READS, {"name": "{campaign}"}),
    ("labelling:report", "POST"): Door(
        False, WRITES, {"name": "{campaign}"}, {"fit_kappa": "0.5", "fit_miss_rate": "0.2"}
    ),
    ("labelling:remeasure", "GET"): Door(False, OWNER_READS, {"name": "{campaign}"}, query="verdicts={verdict_set}"),
    ("labelling:remeasure", "POST"): Door(
        False, REMEASURE_OPEN, {"name": "{campaign}"}, query="verdicts={verdict_set}"
    ),
    ("labelling:export-create", "POST"): Door(True, EXPORTS, {"name": "{campaign}"}, {"format": "jsonl", "seed": "7"}),
    ("labelling:export-download", "GET"): Door(
        False, "downloads an export that the POST which made it recorded", {"name": "{campaign}", "version": "{export}"}
    ),
    ("labelling:verdicts", "POST"): Door(
        False, WRITES, {"name": "{campaign}"}, {"file": "{verdicts_file}", "judge_config": "{judge_config}"}
    ),
    ("labelling:fresh-heldout", "POST"): Door(
        False, WRITES, {"name": "{campaign}"}, {"name": "doors-fresh", "size": "3"}
    ),
    ("labelling:try-prompt", "POST"): Door(
        False,
        TRY_PROMPT,
        {"name": "{try_campaign}"},
        {"base_config": "{runnable}", "name": "doors-tuned", "prompt": "{strict}", "claims": "keep"},
    ),
    ("labelling:bias", "GET"): Door(False, OWNER_READS, {"name": "{campaign}"}, query="judge_config={runnable}"),
    ("labelling:bias", "POST"): Door(
        False,
        BIAS,
        {"name": "{campaign}"},
        {
            "judge_config": "{runnable}",
            "probes": ["context-order"],
            "bar": "0.05",
            "alpha": "0.05",
            "correction": "holm",
        },
    ),
    ("labelling:bias-probe-add", "POST"): Door(
        False,
        WRITES,
        {"name": "{campaign}"},
        {"name": "doors-probe", "kind": "append", "field": "answer", "text": "Sure.", "describes": "when sure"},
    ),
    # the eval owners' API
    ("api-campaigns", "GET"): Door(False, OWNER_READS),
    ("api-campaigns", "POST"): Door(
        False, WRITES, data={"run": "{run_name}", "name": "doors-api-new", "unit": "answer", "size": 4}
    ),
    ("api-campaign-guideline", "GET"): Door(
        False, "the guideline's versions (what annotators are shown)", {"name": "{campaign}"}
    ),
    ("api-campaign-guideline", "POST"): Door(False, WRITES, {"name": "{campaign}"}, {"text": "doors guideline v2"}),
    ("api-bias", "GET"): Door(False, OWNER_READS, {"name": "{campaign}"}),
    ("api-bias", "POST"): Door(
        False, BIAS, {"name": "{campaign}"}, {"judge_config": "{runnable}", "probes": ["context-order"]}
    ),
    ("api-bias-estimate", "GET"): Door(
        False, "estimates a bias battery's cost, calls nothing", {"name": "{campaign}"}, query="judge_config={runnable}"
    ),
    ("api-bias-probes", "GET"): Door(False, "lists the bias probes and their text"),
    ("api-bias-probes", "POST"): Door(
        False,
        WRITES,
        data={"name": "doors-api-probe", "kind": "prepend", "field": "claim", "text": "Hi.", "describes": "x"},
    ),
    ("api-judge-bias", "GET"): Door(False, OWNER_READS, {"config_id": "{runnable}"}),
    ("api-campaign-plan", "GET"): Door(
        False,
        "plans a campaign (strata and predicted half-widths), creates nothing",
        query="run={run_name}&unit=answer&size=4",
    ),
    ("api-campaign", "GET"): Door(False, OWNER_READS, {"name": "{campaign}"}),
    ("api-campaign-labels", "POST"): Door(True, EXPORTS, {"name": "{campaign}"}),
    ("api-campaign-label-import", "POST"): Door(False, WRITES, {"name": "{campaign}"}, {"file": "{labels_file}"}),
    ("api-judge-report", "GET"): Door(False, OWNER_READS, {"name": "{campaign}"}),
    ("api-remeasure", "GET"): Door(False, OWNER_READS, {"name": "{campaign}"}, query="verdicts={verdict_set}"),
    ("api-remeasure", "POST"): Door(False, REMEASURE_OPEN, {"name": "{campaign}"}, query="verdicts={verdict_set}"),
    ("api-exports", "GET"): Door(
        False, "lists the exports (who, when, how many items), not their content", {"name": "{campaign}"}
    ),
    ("api-exports", "POST"): Door(True, EXPORTS, {"name": "{campaign}"}, {"format": "chat"}),
    ("api-judge-report-publish", "POST"): Door(True, EXPORTS, {"name": "{campaign}"}, {"format": "json"}),
    ("api-try-prompt", "POST"): Door(
        False,
        TRY_PROMPT,
        {"name": "{try_campaign}"},
        {"base_config": "{runnable}", "name": "doors-api", "prompt": "{strict}"},
    ),
}

# Commands: (arguments, whether it hands out labels, why).
COMMANDS: dict[str, tuple[list[str], bool, str]] = {
    "export_labels": (["{campaign}", "--format", "jsonl"], True, EXPORTS),
    "export_disagreements": (["{campaign}", "--format", "csv"], True, EXPORTS),
    "judge_report": (["{campaign}", "--json"], False, OWNER_READS),
    "create_campaign": (
        ["--run", "{run_name}", "--name", "doors-cli", "--unit", "answer", "--size", "4"],
        False,
        WRITES,
    ),
    "import_labels": (["{labels_path}", "--campaign", "{campaign}", "--quiet"], False, WRITES),
    "import_verdicts": (
        ["{verdicts_path}", "--campaign", "{campaign}", "--judge-config", "{judge_config_path}", "--quiet"],
        False,
        WRITES,
    ),
    "judge_bias": (
        ["{campaign}", "--judge-config", "{runnable_name}", "--probe", "context-order", "--quiet"],
        False,
        BIAS,
    ),
    "load_demo": ([], False, "loads the demo data and prints what it did"),
    "new_guideline": (["{campaign}", "--text", "doors guideline from the CLI"], False, WRITES),
    "try_prompt": (
        [
            "{try_campaign}",
            "--judge-config",
            "{runnable_name}",
            "--name",
            "doors-cli",
            "--prompt-file",
            "{strict_path}",
        ],
        False,
        TRY_PROMPT,
    ),
}


def labelling_patterns() -> dict[str, URLPattern]:
    """Every URL pattern whose view lives in the labelling app, by its (namespaced) name."""
    found: dict[str, URLPattern] = {}

    def walk(patterns: list, namespace: str | None) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, entry.namespace or namespace)
            elif getattr(entry.callback, "__module__", "").startswith(APP):
                assert entry.name, f"{entry.pattern} has no name: name it and classify it in DOORS"
                found[f"{namespace}:{entry.name}" if namespace else entry.name] = entry

    walk(get_resolver().url_patterns, None)
    return found


def labelling_commands() -> set[str]:
    return {name for name, app in get_commands().items() if app == APP}


@pytest.fixture
def world(small_run, make_campaign, owner, annotator, other_annotator, tmp_path, settings, fake_judge):
    """A campaign half held out, labelled by adam; the owner is an annotator too, holds an item and gave one label;
    a tuned judge's verdicts; one disagreement export; files to import; a claim campaign to try a tuned prompt on
    with a runnable judge (the fake judge)."""
    settings.VAR_DIR = tmp_path / "var"
    campaign = make_campaign(
        run=small_run, name="doors", heldout_fraction=0.5, overlap=2, annotators=[owner, annotator]
    )
    label_items(
        campaign=campaign, user=annotator, value=lambda item: "unsupported" if item.position % 3 == 0 else "supported"
    )
    first = next_item(campaign=campaign, user=owner)
    label = submit_label(campaign=campaign, user=owner, item_id=first.item.pk, value="unsupported")
    held = next_item(campaign=campaign, user=owner)
    verdict_set = import_verdicts(
        folder=tmp_path,
        campaign=campaign,
        file="tuned.jsonl",
        judge_config=TUNED,
        records=[{"question_id": qid_of(i), "supported": i % 2 == 0} for i in range(12)],
    ).verdict_set
    remeasurement_open(campaign=campaign, verdict_set=verdict_set, user=owner)  # so reading it answers 200
    export = disagreements_export(campaign=campaign, fmt="jsonl")
    labels = write_csv(
        tmp_path / "labels.csv", ["question_id", "label", "annotator"], [["q0000", "cant_tell", "ext-x"]]
    )
    other_verdicts = write_jsonl(
        tmp_path / "other.jsonl", [{"question_id": qid_of(i), "supported": True} for i in range(12)]
    )
    other_config = {**TUNED, "temperature": 0.5}
    (tmp_path / "judge.json").write_text(json.dumps({**TUNED, "temperature": 0.7}))
    assert Item.objects.filter(campaign=campaign, split="heldout", label_count__gt=0).exists()
    make_campaign(run=small_run, name="doors-try", unit="claim", heldout_fraction=0.5)
    runnable = judge_config_create(raw=runnable_judge(fake_judge.base_url)).config
    (tmp_path / "strict.txt").write_text(STRICT)
    return SimpleNamespace(
        values={
            "campaign": campaign.name,
            "run": str(small_run.pk),
            "run_name": small_run.name,
            "held": str(held.item.pk),
            "label": str(label.pk),
            "bea": str(other_annotator.pk),
            "verdict_set": str(verdict_set.pk),
            "export": str(export.version),
            "labels_path": str(labels),
            "verdicts_path": str(other_verdicts),
            "judge_config_path": str(tmp_path / "judge.json"),
            "judge_config": json.dumps(other_config),
            "try_campaign": "doors-try",
            "runnable": str(runnable.pk),
            "runnable_name": runnable.name,
            "strict_path": str(tmp_path / "strict.txt"),
            "strict": STRICT,
        },
        files={"labels_file": labels, "verdicts_file": other_verdicts},
        campaign=campaign,
    )


def fill(value: Any, world: SimpleNamespace) -> Any:
    if isinstance(value, list):
        return [fill(v, world) for v in value]
    if isinstance(value, str) and value.startswith("{") and value.endswith("}") and value[1:-1] in world.files:
        path = world.files[value[1:-1]]
        return SimpleUploadedFile(path.name, path.read_bytes())
    return value.format(**world.values) if isinstance(value, str) else value


def call(client, name: str, method: str, door: Door, world: SimpleNamespace):
    url = reverse(name, kwargs={k: fill(v, world) for k, v in door.kwargs.items()})
    if door.query:
        url += "?" + fill(door.query, world)
    data = {k: fill(v, world) for k, v in door.data.items()}
    response = client.get(url) if method == "GET" else client.post(url, data)
    if method == "POST" and response.status_code == 302 and "/exports/" in response.get("Location", ""):
        client.get(response["Location"])  # an export's POST records it; the file comes with a GET
    if getattr(response, "streaming", False):
        b"".join(response.streaming_content)
    return response


def test_every_door_of_the_labelling_app_is_classified(world, owner_client):
    patterns = labelling_patterns()
    classified = {name for name, _ in DOORS}
    assert set(patterns) == classified, (
        f"unclassified URL patterns: {sorted(set(patterns) - classified)}; gone: {sorted(classified - set(patterns))}. "
        "Add each to DOORS: does it hand out people's labels (then it must record an export)?"
    )
    kwargs = {name: door.kwargs for (name, _), door in DOORS.items()}
    for name in patterns:
        for method in ("GET", "POST"):
            if (name, method) not in DOORS:
                response = call(owner_client, name, method, Door(False, "", kwargs[name]), world)
                assert response.status_code == 405, (
                    f"{method} {name} answers ({response.status_code}) but is not classified in DOORS"
                )
    assert labelling_commands() == set(COMMANDS), (
        f"unclassified commands: {sorted(labelling_commands() - set(COMMANDS))}; gone: {sorted(set(COMMANDS) - labelling_commands())}"
    )


@pytest.mark.parametrize(("name", "method"), sorted(DOORS))
def test_a_door_records_an_export_exactly_when_it_hands_out_labels(name, method, world, owner_client):
    door = DOORS[(name, method)]
    before = set(ExportRecord.objects.values_list("pk", flat=True))

    response = call(owner_client, name, method, door, world)

    assert response.status_code < 400, f"{method} {name} answered {response.status_code}: fix its call in DOORS"
    new = ExportRecord.objects.exclude(pk__in=before)
    if door.exports:
        record = new.get()
        assert record.campaign == world.campaign and record.created_by is not None
        if (
            record.kind == ExportRecord.Kind.LABELS
        ):  # every label: the held-out ones are counted, so the report can warn
            assert (
                record.heldout_items
                == Item.objects.filter(campaign=world.campaign, split="heldout", labels__isnull=False)
                .distinct()
                .count()
                > 0
            )
    else:
        assert not new.exists(), (
            f"{method} {name} recorded an export but is classified as not handing out labels ({door.why})"
        )


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_records_an_export_exactly_when_it_hands_out_labels(command, world):
    arguments, exports, why = COMMANDS[command]
    before = ExportRecord.objects.count()

    call_command(command, *[fill(a, world) for a in arguments], stdout=io.StringIO(), stderr=io.StringIO())

    created = ExportRecord.objects.count() - before
    assert created == (1 if exports else 0), f"{command}: {why}"
    assert Campaign.objects.filter(name=world.campaign.name).exists()


@pytest.mark.parametrize(("name", "method"), sorted(door for door in DOORS if door[1] == "GET"))
def test_a_get_changes_nothing(name, method, world, owner_client):
    """Reading is safe: no lease is claimed, no export or view recorded, nothing written (schemathesis checks the API too)."""
    before = labelling_state()
    response = call(owner_client, name, method, DOORS[(name, method)], world)
    assert response.status_code < 400
    assert labelling_state() == before, f"GET {name} changed the database"
