"""Labelling campaigns: a seeded, stratified sample of a run's answers or claims, labelled blind.

Invariants the database enforces (so no code path can break them):

* one label per (item, annotator), and per (item, external annotator) for imported labels;
* one label per (annotator, idempotency key): an answer sent again with its key is the same answer;
* at most one active lease per (item, annotator);
* an item's ``slots_taken`` (labels plus active leases) never exceeds the campaign's overlap
  (a check constraint on a denormalized copy of the overlap);
* an item belongs to one split forever (no field to move it, and the model refuses changes).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F
from django.utils import timezone

from evalcore.models import Row, Run

from .model_bases import Authored


class Campaign(Authored):
    """A sample of a run's answers (or claims) that people label for one named judge metric.

    The label set is binary (pass / fail in the metric's words, plus can't tell) or an ordinal
    scale (``scale_min``..``scale_max``) whose scores at or below ``fail_at`` are the failure class.
    A label's ``value`` is always its class (``supported`` = pass, ``unsupported`` = failure), so
    every binary statistic holds for both; ordinal labels keep their ``score`` too.
    """

    class Unit(models.TextChoices):
        ANSWER = "answer", "Whole answers"
        CLAIM = "claim", "Single claims"

    class Scale(models.TextChoices):
        BINARY = "binary", "Pass / fail"
        ORDINAL = "ordinal", "Ordinal scale"

    class Shows(models.TextChoices):
        CONTEXT = "context", "The context the model saw"
        QUESTION = "question", "The question"
        REFERENCE = "reference", "The question's reference answer"

    DEFAULT_QUESTIONS = {
        Unit.ANSWER: "Is the answer supported by the context?",
        Unit.CLAIM: "Is this claim supported by the context?",
    }

    name = models.SlugField(max_length=100, unique=True)
    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="campaigns")
    unit = models.CharField(max_length=10, choices=Unit.choices)
    metric = models.CharField(
        max_length=100, default="faithfulness", help_text="The judge metric of the run these labels validate."
    )
    shows = models.CharField(
        max_length=10, choices=Shows.choices, default=Shows.CONTEXT, help_text="What the metric needs on the page."
    )
    scale = models.CharField(max_length=10, choices=Scale.choices, default=Scale.BINARY)
    pass_word = models.CharField(max_length=40, default="Supported")
    fail_word = models.CharField(max_length=40, default="Unsupported")
    scale_min = models.SmallIntegerField(null=True, blank=True)
    scale_max = models.SmallIntegerField(null=True, blank=True)
    fail_at = models.FloatField(
        null=True, blank=True, help_text="Ordinal: scores at or below this are the failure class."
    )
    judge_pass_at = models.FloatField(
        null=True,
        blank=True,
        help_text="Binary campaigns on a judge score: the judge passes an answer whose score is at least this.",
    )
    judge_question = models.TextField(help_text="The question the judge answers, shown verbatim to annotators.")
    guidance = models.TextField(blank=True, help_text="Extra guidance from the eval owner.")
    size = models.PositiveIntegerField(help_text="Items sampled.")
    seed = models.PositiveIntegerField(default=7)
    heldout_fraction = models.FloatField(default=0.3)
    overlap = models.PositiveSmallIntegerField(default=1, help_text="Different annotators per item.")
    lease_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="How long an annotator holds an item without activity; empty: the site's LABEL_LEASE_SECONDS, "
        "as it is set at each hand-out.",
    )
    strata = models.JSONField(default=list, blank=True, help_text="Per stratum: available and sampled counts.")
    allocation = models.CharField(
        max_length=10,
        default="floor",
        help_text="How the tuning items were spread over the strata: floor (the judge's rare verdict gets at least a "
        "quarter) or neyman (where the judge is least reliable); held-out items are drawn at random either way.",
    )
    fit_kappa = models.FloatField(default=0.7, help_text="Judge fit to gate needs kappa at least this.")
    fit_miss_rate = models.FloatField(default=0.15, help_text="... and a failure-class miss rate at most this.")
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="fresh_samples",
        help_text="The campaign this one is a fresh held-out sample for.",
    )
    annotators = models.ManyToManyField(settings.AUTH_USER_MODEL, through="CampaignAnnotator", related_name="campaigns")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(overlap__gte=1), name="campaign_overlap_positive"),
            models.CheckConstraint(
                condition=models.Q(heldout_fraction__gte=0) & models.Q(heldout_fraction__lte=1),
                name="campaign_heldout_fraction_range",
            ),
            models.CheckConstraint(condition=models.Q(unit__in=["answer", "claim"]), name="campaign_unit_valid"),
            models.CheckConstraint(
                condition=models.Q(scale="binary", scale_min__isnull=True, scale_max__isnull=True, fail_at__isnull=True)
                | models.Q(
                    scale="ordinal",
                    scale_min__isnull=False,
                    scale_max__gt=models.F("scale_min"),
                    fail_at__gte=models.F("scale_min"),
                    fail_at__lt=models.F("scale_max"),
                ),
                name="campaign_label_set_valid",
            ),
            models.CheckConstraint(condition=~models.Q(metric=""), name="campaign_metric_named"),
            models.CheckConstraint(
                condition=models.Q(allocation__in=["floor", "neyman"]), name="campaign_allocation_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def ordinal(self) -> bool:
        return self.scale == self.Scale.ORDINAL

    @property
    def scale_points(self) -> list[int]:
        """The ordinal scale's points, lowest first (empty for a binary campaign)."""
        return list(range(self.scale_min, self.scale_max + 1)) if self.ordinal else []

    @property
    def choices(self) -> list[dict[str, str]]:
        """The answers the labelling page offers, each with its key and words (can't tell last)."""
        if self.ordinal:
            points = [
                {"value": str(p), "key": str(p), "word": f"{p}", "css": "unsupported" if self.fails(p) else "supported"}
                for p in self.scale_points
            ]
        else:
            points = [
                {"value": "supported", "key": "S", "word": self.pass_word, "css": "supported"},
                {"value": "unsupported", "key": "U", "word": self.fail_word, "css": "unsupported"},
            ]
        return [*points, {"value": "cant_tell", "key": "C", "word": "Can't tell", "css": ""}]

    def answer_word(self, answer: str) -> str:
        """An answer (a label's value or score) in the campaign's words: "relevant", "4 of 1–5", "can't tell"."""
        if answer == Label.Value.CANT_TELL:
            return "can't tell"
        if self.ordinal:
            return f"{answer} on {self.scale_min}–{self.scale_max}"
        return (self.pass_word if answer == Label.Value.SUPPORTED else self.fail_word).lower()

    @property
    def scale_words(self) -> str:
        """The label set in words, for pages and reports."""
        if self.ordinal:
            return f"scores {self.scale_min}–{self.scale_max}; {self.scale_min}–{self.fail_at:g} is the failure class"
        return f"{self.pass_word} / {self.fail_word}"

    def fails(self, score: float) -> bool:
        """Whether a score on the campaign's scale is in the failure class."""
        return score <= self.fail_at

    def definition(self) -> dict[str, Any]:
        """What the metric means here: changing any of it makes a certificate on it stale."""
        return {
            "metric": self.metric,
            "unit": self.unit,
            "scale": self.scale,
            "scale_min": self.scale_min,
            "scale_max": self.scale_max,
            "fail_at": self.fail_at,
            "judge_pass_at": self.judge_pass_at,
            "question": self.judge_question,
        }

    @cached_property
    def guideline(self) -> Guideline | None:
        """The guideline annotators are shown now (the newest version; read once per loaded campaign)."""
        return self.guidelines.order_by("-version").first()

    @property
    def lease_length(self) -> int:
        """Seconds an item is held without activity: the campaign's own, else ``LABEL_LEASE_SECONDS`` as set now."""
        return self.lease_seconds or settings.LABEL_LEASE_SECONDS


class GuidelineQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        raise ValueError("A guideline version is frozen: write a new version instead.")


class Guideline(Authored):
    """One version of the guideline annotators see; frozen once written (a change is a new version)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="guidelines")
    version = models.PositiveIntegerField()
    text = models.TextField(blank=True)

    objects = GuidelineQuerySet.as_manager()

    class Meta:
        ordering = ["campaign", "version"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "version"], name="guideline_version_unique"),
            models.CheckConstraint(condition=models.Q(version__gte=1), name="guideline_version_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.campaign.name} guideline v{self.version}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ValueError("A guideline version is frozen: write a new version instead.")
        super().save(*args, **kwargs)


class CampaignAnnotator(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    #: the labelling page (one browser tab) this person labels the campaign from; another tab is told so
    page = models.CharField(max_length=40, blank=True)
    page_seen_at = models.DateTimeField(null=True, blank=True)
    added_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "user"], name="campaign_annotator_unique")]


class ItemQuerySet(models.QuerySet):
    """The slot counter's operations, each one conditional ``UPDATE`` (see ``services/assignment.py``).

    ``slots_taken`` counts labels (not can't-tell) plus active leases; ``label_count`` counts the
    labels. Check constraints keep both within the overlap, so no operation can overfill an item.
    Call them on a one-item queryset: ``Item.objects.filter(pk=pk).take_slot()``.
    """

    def take_slot(self) -> bool:
        """``SET slots_taken = slots_taken + 1 WHERE slots_taken < overlap``; False when the item was full."""
        return bool(self.filter(slots_taken__lt=F("overlap")).update(slots_taken=F("slots_taken") + 1))

    def give_back_slot(self) -> bool:
        """``SET slots_taken = slots_taken - 1 WHERE slots_taken > 0`` (a lease ended without a label)."""
        return bool(self.filter(slots_taken__gt=0).update(slots_taken=F("slots_taken") - 1))

    def count_label(self) -> bool:
        """A held slot became a label: ``label_count + 1``, the slot stays taken."""
        return bool(self.update(label_count=F("label_count") + 1))

    def take_labelled_slot(self) -> bool:
        """A slot and a label at once, with no lease before it (an imported label, can't-tell changed
        to a label); False when the item was full."""
        return bool(
            self.filter(slots_taken__lt=F("overlap")).update(
                slots_taken=F("slots_taken") + 1, label_count=F("label_count") + 1
            )
        )

    def give_back_labelled_slot(self) -> bool:
        """A label withdrawn (changed to can't-tell): its slot and its count go back.

        The label held a slot, so both counters are at least 1 (the check constraints refuse less).
        """
        return bool(self.update(slots_taken=F("slots_taken") - 1, label_count=F("label_count") - 1))


class Item(models.Model):
    class Split(models.TextChoices):
        TUNING = "tuning", "Tuning"
        HELDOUT = "heldout", "Held out"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="items")
    row = models.ForeignKey(Row, on_delete=models.PROTECT, related_name="label_items")
    claim_index = models.PositiveIntegerField(
        null=True, blank=True, help_text="For claim campaigns: which claim of the answer."
    )
    split = models.CharField(max_length=10, choices=Split.choices)
    stratum = models.CharField(max_length=200, help_text="Question type and judge verdict the item was sampled from.")
    judge_supported = models.BooleanField(help_text="The judge's verdict (pass). Never sent to annotators.")
    judge_score = models.FloatField(
        null=True, blank=True, help_text="Ordinal campaigns: the judge's score on the scale. Never sent to annotators."
    )
    sampling_weight = models.FloatField(default=1.0, help_text="Stratum population over stratum sample size.")
    inclusion_probability = models.FloatField(
        null=True,
        blank=True,
        help_text="The chance the item was sampled, its stratum's sample size over its size (null: sampled before "
        "it was recorded; then 1 / sampling_weight).",
    )
    position = models.PositiveIntegerField(help_text="Order in which items are handed out.")
    overlap = models.PositiveSmallIntegerField(help_text="Copy of the campaign's overlap, for the constraint.")
    slots_taken = models.PositiveSmallIntegerField(default=0, help_text="Labels (not can't-tell) plus active leases.")
    label_count = models.PositiveSmallIntegerField(default=0, help_text="Supported / unsupported labels.")

    objects = ItemQuerySet.as_manager()

    class Meta:
        ordering = ["campaign", "position"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "row", "claim_index"], name="item_claim_unique_in_campaign"),
            models.UniqueConstraint(
                fields=["campaign", "row"],
                condition=models.Q(claim_index__isnull=True),
                name="item_answer_unique_in_campaign",
            ),
            models.UniqueConstraint(fields=["campaign", "position"], name="item_position_unique"),
            models.CheckConstraint(
                condition=models.Q(slots_taken__lte=models.F("overlap")), name="item_slots_within_overlap"
            ),
            models.CheckConstraint(
                condition=models.Q(label_count__lte=models.F("overlap")), name="item_labels_within_overlap"
            ),
            models.CheckConstraint(condition=models.Q(split__in=["tuning", "heldout"]), name="item_split_valid"),
        ]
        indexes = [models.Index(fields=["campaign", "slots_taken", "position"], name="item_next_idx")]

    def __str__(self) -> str:
        suffix = f" claim {self.claim_index + 1}" if self.claim_index is not None else ""
        return f"{self.campaign.name}:{self.row.question.qid}{suffix}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            update_fields = kwargs.get("update_fields")
            if update_fields is None or set(update_fields) - {"slots_taken", "label_count"}:
                raise ValueError("An item's sample, split and verdict are fixed when the campaign is created.")
        super().save(*args, **kwargs)

    @property
    def claim(self) -> dict[str, Any] | None:
        if self.claim_index is None:
            return None
        claims = self.row.claims
        return claims[self.claim_index] if self.claim_index < len(claims) else None


class LeaseQuerySet(models.QuerySet):
    def active(self) -> LeaseQuerySet:
        return self.filter(status=Lease.Status.ACTIVE)

    def close(self, *, status: str) -> bool:
        """End an active lease (conditional: only the request that flips the status gets True)."""
        return bool(self.active().update(status=status, closed_at=timezone.now()))


class Lease(models.Model):
    """An annotator's hold on an item: until they answer, skip, or it expires and the item goes back to the pool.

    An active lease holds one of the item's slots (``Item.slots_taken``).
    """

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        SUBMITTED = "submitted", "Submitted"
        SKIPPED = "skipped", "Skipped"
        EXPIRED = "expired", "Expired"

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="leases")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="leases")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    served_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)

    objects = LeaseQuerySet.as_manager()

    class Meta:
        db_table = "labelling_assignment"  # the table kept its first name (the model was Assignment)
        constraints = [
            models.UniqueConstraint(
                fields=["item", "annotator"], condition=models.Q(status="active"), name="assignment_one_active_lease"
            ),
        ]
        indexes = [models.Index(fields=["status", "expires_at"], name="assignment_expiry_idx")]


class Label(models.Model):
    class Value(models.TextChoices):
        SUPPORTED = "supported", "Supported"
        UNSUPPORTED = "unsupported", "Unsupported"
        CANT_TELL = "cant_tell", "Can't tell"

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="labels")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="labels"
    )
    external_annotator = models.CharField(
        max_length=150, blank=True, help_text="An annotator who is not a user (imported labels)."
    )
    value = models.CharField(max_length=12, choices=Value.choices)
    score = models.SmallIntegerField(null=True, blank=True, help_text="Ordinal campaigns: the score given.")
    guideline_version = models.PositiveIntegerField(default=1, help_text="The guideline version it was given under.")
    rationale = models.TextField(blank=True)
    seconds = models.FloatField(null=True, blank=True, help_text="Time from the item being shown to the label.")
    source = models.CharField(
        max_length=10, default="ui", choices=[("ui", "Labelling page"), ("api", "API"), ("import", "Import")]
    )
    idempotency_key = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="The key the answer was sent with: a repeat with the same key is the same answer, not a new one.",
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["item", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="label_idempotency_key_unique",
            ),
            models.UniqueConstraint(
                fields=["item", "annotator"],
                condition=models.Q(annotator__isnull=False),
                name="label_one_per_annotator",
            ),
            models.UniqueConstraint(
                fields=["item", "external_annotator"],
                condition=~models.Q(external_annotator=""),
                name="label_one_per_external_annotator",
            ),
            models.CheckConstraint(
                condition=(models.Q(annotator__isnull=False) & models.Q(external_annotator=""))
                | (models.Q(annotator__isnull=True) & ~models.Q(external_annotator="")),
                name="label_has_one_annotator",
            ),
            models.CheckConstraint(
                condition=models.Q(value__in=["supported", "unsupported", "cant_tell"]), name="label_value_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item_id}: {self.value} by {self.annotator_name}"

    @property
    def annotator_name(self) -> str:
        return self.annotator.username if self.annotator_id else f"{self.external_annotator} (external)"

    @property
    def answer(self) -> str:
        """The answer as the page sends it: the score on an ordinal campaign, else the value."""
        return str(self.score) if self.score is not None else self.value

    @property
    def counts(self) -> bool:
        """Can't-tell answers are recorded but are not labels."""
        return self.value != self.Value.CANT_TELL


class Adjudication(models.Model):
    """The eval owner's final label for an item whose labels conflict."""

    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="adjudication")
    value = models.CharField(max_length=12, choices=[("supported", "Supported"), ("unsupported", "Unsupported")])
    score = models.SmallIntegerField(null=True, blank=True, help_text="Ordinal campaigns: the final score.")
    note = models.TextField(blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(default=timezone.now)


class VerdictSet(Authored):
    """Verdicts of another judge config on a campaign's items (a re-run with a tuned prompt)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="verdict_sets")
    judge_config = models.ForeignKey("evalcore.JudgeConfig", on_delete=models.PROTECT, related_name="verdict_sets")
    source_name = models.CharField(max_length=255, blank=True)
    source_hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["campaign", "created_at"]
        constraints = [models.UniqueConstraint(fields=["campaign", "judge_config"], name="verdict_set_one_per_judge")]

    def __str__(self) -> str:
        return f"{self.campaign.name}: {self.judge_config}"


class Verdict(models.Model):
    verdict_set = models.ForeignKey(VerdictSet, on_delete=models.CASCADE, related_name="verdicts")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="verdicts")
    supported = models.BooleanField()
    rationale = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["verdict_set", "item"], name="verdict_one_per_item")]


class ExportRecord(Authored):
    """Every export of items (disagreement examples, label exports, published judge reports): who, when, which
    items, which judge.

    The judge report warns when any held-out item was ever exported (leakage).
    """

    class Kind(models.TextChoices):
        DISAGREEMENTS = "disagreements", "Disagreement examples"
        LABELS = "labels", "Labels"
        REPORT = "report", "Judge validation report"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="exports")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    version = models.PositiveIntegerField()
    fmt = models.CharField(max_length=20)
    options = models.JSONField(default=dict, blank=True)
    judge_config = models.ForeignKey(
        "evalcore.JudgeConfig", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    item_ids = models.JSONField(default=list)
    heldout_items = models.PositiveIntegerField(default=0)
    content = models.TextField(blank=True, help_text="The exported file, so it can be downloaded again.")

    class Meta:
        ordering = ["campaign", "-version"]
        constraints = [models.UniqueConstraint(fields=["campaign", "version"], name="export_version_unique")]

    def __str__(self) -> str:
        return f"{self.campaign.name} export v{self.version} ({self.kind}, {self.fmt})"


class RemeasurementView(models.Model):
    """An eval owner looked at a re-measurement on the held-out split: tuning again after this spends it."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="remeasurement_views")
    verdict_set = models.ForeignKey(VerdictSet, on_delete=models.CASCADE, related_name="+")
    viewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    viewed_at = models.DateTimeField(default=timezone.now)


# Tables kept in modules of their own, imported here so Django finds them (they import nothing from this one).
from .bias_models import BiasBattery, BiasProbe  # noqa: E402, F401
from .certificate_models import Certificate  # noqa: E402, F401
