"""Many annotators at once, each in its own thread with its own database connection.

Afterwards every item has exactly ``overlap`` labels from ``overlap`` different people: none lost,
none extra, and the denormalized counters agree with the label rows. The threads stop only when
the campaign is really finished for them (no item they have not labelled still lacks labels), so
the outcome never depends on timing; a hard deadline turns a hang into a failure.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import pytest
from django.db import connection
from django.db.models import Count, F

from labelstudio_lite.labelling.models import Campaign, Item, Label, Lease
from labelstudio_lite.labelling.services.assignment import next_item, submit_label
from tests.factories import make_campaign, make_marked_run

DEADLINE_SECONDS = 240


def annotate_until_done(campaign_id: int, user_id: int, start: threading.Barrier, stats: dict, errors: list) -> None:
    """One annotator: take the next item and label it, until nothing is left for them."""
    from django.contrib.auth import get_user_model

    try:
        campaign = Campaign.objects.get(pk=campaign_id)
        user = get_user_model().objects.get(pk=user_id)
        rng = random.Random(user_id)
        labelled = waits = 0
        start.wait(timeout=60)
        deadline = time.monotonic() + DEADLINE_SECONDS
        while time.monotonic() < deadline:
            served = next_item(campaign=campaign, user=user)
            if served is None:
                # Done, unless an item still lacks labels and this annotator has not labelled it
                # (its last slot may be held by someone else's lease for a moment).
                still_open = (
                    Item.objects.filter(campaign=campaign, label_count__lt=F("overlap"))
                    .exclude(labels__annotator=user)
                    .exists()
                )
                if not still_open:
                    break
                waits += 1
                time.sleep(0.005)
                continue
            value = "supported" if rng.random() < 0.7 else "unsupported"
            submit_label(campaign=campaign, user=user, item_id=served.item.pk, value=value)
            labelled += 1
        else:
            raise AssertionError(f"annotator {user.username} did not finish within {DEADLINE_SECONDS} s")
        stats[user.username] = {"labels": labelled, "waits": waits}
    except BaseException as error:  # noqa: BLE001 - reported by the test
        errors.append(error)
        start.abort()
    finally:
        connection.close()


def run_annotators(campaign: Campaign, users: list) -> dict:
    start = threading.Barrier(len(users))
    stats: dict = {}
    errors: list = []
    threads = [
        threading.Thread(
            target=annotate_until_done, args=(campaign.pk, u.pk, start, stats, errors), name=f"annotator-{u.username}"
        )
        for u in users
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_SECONDS + 60)
    assert not any(t.is_alive() for t in threads), "an annotator thread hung"
    assert not errors, f"{len(errors)} annotator thread(s) failed, first: {errors[0]!r}"
    return stats


def make_campaign_with_annotators(
    tmp_path, django_user_model, *, items: int, annotators: int, overlap: int
) -> tuple[Campaign, list]:
    run = make_marked_run(
        folder=tmp_path / "many", n=items, evalset="many", claims=1, verdicts=lambda i, c: [i % 5 != 0]
    )
    users = [
        django_user_model.objects.create_user(f"annotator{i:02d}", password="x-pass-123456", role="annotator")
        for i in range(annotators)
    ]
    campaign = make_campaign(run=run, name="crowd", size=items, overlap=overlap, heldout_fraction=0.3, annotators=users)
    assert campaign.items.count() == items
    return campaign, users


def assert_exactly_overlap_labels_from_different_people(
    campaign: Campaign, items: int, overlap: int, annotators: int, stats: dict
) -> None:
    labels = Label.objects.filter(item__campaign=campaign)
    assert labels.count() == items * overlap, "labels lost or extra"
    assert not labels.filter(annotator__isnull=True).exists()
    per_item = Counter(labels.values_list("item_id", flat=True))
    assert len(per_item) == items and set(per_item.values()) == {overlap}
    distinct = labels.values("item_id").annotate(people=Count("annotator", distinct=True))
    assert {row["people"] for row in distinct} == {overlap}, "an annotator labelled an item twice"
    counters = set(Item.objects.filter(campaign=campaign).values_list("slots_taken", "label_count"))
    assert counters == {(overlap, overlap)}
    assert not Lease.objects.filter(item__campaign=campaign, status=Lease.Status.ACTIVE).exists()
    assert Lease.objects.filter(item__campaign=campaign, status=Lease.Status.SUBMITTED).count() == items * overlap
    assert sum(s["labels"] for s in stats.values()) == items * overlap
    assert len(stats) == annotators


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_twenty_annotators_in_parallel_label_a_thousand_items_with_overlap_two_exactly(tmp_path, django_user_model):
    campaign, users = make_campaign_with_annotators(tmp_path, django_user_model, items=1000, annotators=20, overlap=2)

    stats = run_annotators(campaign, users)

    assert_exactly_overlap_labels_from_different_people(campaign, 1000, 2, 20, stats)
    # everyone took part: no annotator was starved by the others
    assert min(s["labels"] for s in stats.values()) > 0


@pytest.mark.slow  # seconds of subprocesses or simulation: CI runs it (./dev test -m "")
@pytest.mark.django_db(transaction=True)
def test_eight_annotators_in_parallel_label_two_hundred_items_with_overlap_two_exactly(tmp_path, django_user_model):
    """The same guarantee on the embedded SQLite default (this runs in the default suite)."""
    campaign, users = make_campaign_with_annotators(tmp_path, django_user_model, items=200, annotators=8, overlap=2)

    stats = run_annotators(campaign, users)

    assert_exactly_overlap_labels_from_different_people(campaign, 200, 2, 8, stats)


@pytest.mark.django_db(transaction=True)
def test_annotators_racing_for_the_last_slot_never_overfill_an_item(tmp_path, django_user_model):
    """Twelve annotators ask at the same instant for one item with room for two: exactly two get it."""
    campaign, users = make_campaign_with_annotators(tmp_path, django_user_model, items=1, annotators=12, overlap=2)
    start = threading.Barrier(len(users))
    served: dict[str, int | None] = {}
    errors: list = []

    def ask(user) -> None:
        try:
            start.wait(timeout=60)
            got = next_item(campaign=campaign, user=user)
            served[user.username] = got.item.pk if got else None
            if got:
                submit_label(campaign=campaign, user=user, item_id=got.item.pk, value="supported")
        except BaseException as error:  # noqa: BLE001
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=ask, args=(u,)) for u in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    assert not errors, errors
    assert sum(1 for v in served.values() if v is not None) == 2
    item = Item.objects.get(campaign=campaign)
    assert (item.slots_taken, item.label_count, item.labels.count()) == (2, 2, 2)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_open_item_locked_for_a_moment_by_someone_elses_submit_is_not_reported_as_done(tmp_path, django_user_model):
    """The last open item is row-locked by another annotator's transaction: wait for it, don't say "done"."""
    from django.db import transaction

    campaign, (first, second) = make_campaign_with_annotators(
        tmp_path, django_user_model, items=1, annotators=2, overlap=2
    )
    item = Item.objects.get(campaign=campaign)
    served = next_item(campaign=campaign, user=first)
    locked, release = threading.Event(), threading.Event()

    def submit_slowly() -> None:
        try:
            with transaction.atomic():
                Item.objects.select_for_update().get(pk=item.pk)  # as a submit in flight holds the row
                locked.set()
                release.wait(30)
                submit_label(campaign=campaign, user=first, item_id=served.item.pk, value="supported")
        finally:
            connection.close()

    holder = threading.Thread(target=submit_slowly)
    holder.start()
    assert locked.wait(30)
    threading.Timer(0.5, release.set).start()

    got = next_item(campaign=campaign, user=second)

    holder.join(30)
    assert got is not None, "the second annotator was told they were done while the item still had a slot for them"
    assert got.item.pk == item.pk
    submit_label(campaign=campaign, user=second, item_id=item.pk, value="unsupported")
    item.refresh_from_db()
    assert (item.slots_taken, item.label_count) == (2, 2)
