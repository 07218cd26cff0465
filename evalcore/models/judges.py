"""Judges: pinned judge configs, and the cache of every call the tool made to one.

A :class:`JudgeConfig` pins everything that can change a verdict (the endpoint kind, the model,
the prompts, the few-shot examples, temperature, seed, max tokens, structured output) under one
hash. Where to reach it (base URL, the name of the environment variable that holds the API key),
how hard to push it (concurrency, rate limits) and what it costs change no verdict: they are kept
beside the pinned part, outside the hash, and are the only fields that may change later. The API
key itself is never stored.

A :class:`JudgeCall` is one answered call, keyed by (config hash, input hash): re-running a job,
resuming it after a crash or re-scoring a baseline reads it instead of paying for the call again.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

#: The fields of a judge config that change no verdict: the only ones that may be updated.
CONNECTION_FIELDS = frozenset({"name", "base_url", "api_key_env", "limits", "price"})


class JudgeConfig(models.Model):
    """Everything that can change a judge's output, pinned and stored once.

    Runs that used the same judge share one row (``config_hash`` is unique). Scores from
    different judge configs are never compared: re-score the baseline with the new judge first.
    Configs imported with a run describe a judge that ran elsewhere; configs with an endpoint kind
    and a verdict prompt can be run by the tool (:attr:`runnable`).
    """

    class EndpointKind(models.TextChoices):
        OPENAI = "openai", "OpenAI"
        VLLM = "vllm", "vLLM"
        OLLAMA = "ollama", "Ollama"
        LLAMACPP = "llamacpp", "llama.cpp server"
        LITELLM = "litellm", "LiteLLM proxy"

    class StructuredOutput(models.TextChoices):
        JSON_SCHEMA = "json_schema", "JSON schema (response_format json_schema)"
        JSON_OBJECT = "json_object", "JSON object (response_format json_object)"
        PROMPT = "prompt", "asked for in the prompt only"

    name = models.SlugField(max_length=100, null=True, blank=True, unique=True)
    model = models.CharField(max_length=200)
    model_version = models.CharField(max_length=200, blank=True)
    prompt = models.TextField(blank=True, help_text="The verdict prompt (a template for runnable configs).")
    prompt_hash = models.CharField(max_length=64)
    temperature = models.FloatField(null=True, blank=True)
    claim_splitting = models.CharField(max_length=200, blank=True, help_text="How answers are split into claims.")
    library_versions = models.JSONField(default=dict, blank=True)
    extra = models.JSONField(default=dict, blank=True)
    endpoint_kind = models.CharField(max_length=20, blank=True, choices=EndpointKind.choices)
    system_prompt = models.TextField(blank=True)
    claim_prompt = models.TextField(blank=True, help_text="The claim-splitting prompt (a template).")
    seed = models.BigIntegerField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    structured_output = models.CharField(max_length=20, blank=True, choices=StructuredOutput.choices)
    claims_schema = models.JSONField(default=dict, blank=True)
    verdict_schema = models.JSONField(default=dict, blank=True)
    few_shot = models.JSONField(
        default=dict, blank=True, help_text="Where the few-shot examples come from: a disagreement export version."
    )
    few_shot_examples = models.JSONField(default=list, blank=True, help_text="The examples, as pinned.")
    config_hash = models.CharField(max_length=64, unique=True)
    # Outside the hash: where the judge is reached, how hard it is pushed and what it costs.
    base_url = models.CharField(max_length=500, blank=True)
    api_key_env = models.CharField(
        max_length=100, blank=True, help_text="The environment variable that holds the API key (never the key)."
    )
    limits = models.JSONField(default=dict, blank=True)
    price = models.JSONField(default=dict, blank=True, help_text="Price per 1,000 input and output tokens.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        version = f"-{self.model_version}" if self.model_version and self.model_version not in self.model else ""
        pinned = f"{self.model}{version} · prompt {self.prompt_hash[:6]}"
        return f"{self.name} ({pinned})" if self.name else pinned

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            update_fields = kwargs.get("update_fields")
            if update_fields is None or set(update_fields) - CONNECTION_FIELDS:
                raise ValueError(
                    "A judge config is pinned: a changed judge is a new config "
                    f"(only {', '.join(sorted(CONNECTION_FIELDS))} may change)."
                )
        super().save(*args, **kwargs)

    @property
    def runnable(self) -> bool:
        """Whether the tool can call this judge: it names its endpoint kind and has a verdict prompt."""
        return bool(self.endpoint_kind and self.prompt)

    @property
    def label(self) -> str:
        """A short name: the config's name, or its hash's first characters."""
        return self.name or f"judge-{self.config_hash[:8]}"


class JudgeCall(models.Model):
    """One answered call to a judge, cached by (config hash, input hash); failures are not cached."""

    class Kind(models.TextChoices):
        CLAIMS = "claims", "Split an answer into claims"
        VERDICT = "verdict", "Verdict on a claim"

    config_hash = models.CharField(max_length=64)
    input_hash = models.CharField(max_length=64)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    output = models.JSONField(help_text="The answer, validated against the config's schema.")
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["config_hash", "input_hash"], name="judge_call_unique_input"),
            models.CheckConstraint(condition=models.Q(kind__in=["claims", "verdict"]), name="judge_call_kind_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.input_hash[:8]} ({self.config_hash[:8]})"
