"""Bias probes: pinned, versioned transformations of what a judge is shown, that should not change its verdict.

A probe is a :class:`ProbeSpec`: a name and version, a kind, the field it changes, its text (shown
to the owner before anything runs) and the words that describe it in a verdict ("when the answer
ends with an expert's assurance"). Its :attr:`ProbeSpec.spec_hash` pins all of it: a changed probe
is a new version, and a battery records the specs it ran.

Kinds:

* ``append`` / ``prepend``: the text is added after (before) the field: ``answer``, ``claim`` or
  ``question``; for ``context`` it is one more chunk, last (first);
* ``reverse_context``: the context chunks in reverse order (no text);
* ``reverse_sentences``: the answer's sentences in reverse order (the claims reordered; no text);
* ``placebo``: nothing changes; the prompt is sent again under another seed (another cache key),
  which measures how often the judge changes its verdict for no reason.

The built-in probes (:data:`BUILT_IN`) cover verbosity, authority, attribution to a named model
and the two orders; owners add their own ``append`` / ``prepend`` probes (stored and versioned by
the labelling app). A probe whose field the verdict prompt does not show changes nothing: the
battery says so for each probe (:func:`applies`) and leaves such claims out of that probe.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, replace
from typing import Any

from .prompts import ItemText

APPEND, PREPEND, REVERSE_CONTEXT, REVERSE_SENTENCES, PLACEBO = (
    "append",
    "prepend",
    "reverse_context",
    "reverse_sentences",
    "placebo",
)
KINDS = (APPEND, PREPEND, REVERSE_CONTEXT, REVERSE_SENTENCES, PLACEBO)
#: The kinds an owner may add (the others are the built-in reorderings and the placebo).
OWNER_KINDS = (APPEND, PREPEND)
FIELDS = ("answer", "claim", "question", "context")
PLACEBO_NAME = "placebo"
SENTENCE = re.compile(r"(?<=[.!?])\s+")


class ProbeError(ValueError):
    """A probe that cannot be applied as given: the message names the field and how to fix it."""


@dataclass(frozen=True, kw_only=True)
class ProbeSpec:
    """One pinned transformation of a judge's input."""

    name: str
    version: int
    kind: str
    field: str = ""
    text: str = ""
    describes: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ProbeError(f"probe {self.name}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind in OWNER_KINDS:
            if self.field not in FIELDS:
                raise ProbeError(f"probe {self.name}: field must be one of {', '.join(FIELDS)}, got {self.field!r}")
            if not self.text.strip():
                raise ProbeError(f"probe {self.name}: an {self.kind} probe needs the text it adds")
        if not self.describes.strip():
            raise ProbeError(f"probe {self.name}: say in words what it does (describes), e.g. 'when the answer ...'")

    @property
    def label(self) -> str:
        return f"{self.name}@v{self.version}"

    @property
    def pinned(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def spec_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.pinned, sort_keys=True).encode()).hexdigest()

    @property
    def is_placebo(self) -> bool:
        return self.kind == PLACEBO

    @property
    def shown(self) -> str:
        """What the probe does, as the owner reads it before the battery runs."""
        if self.kind == APPEND:
            return f"adds after the {self.field}: {self.text!r}"
        if self.kind == PREPEND:
            return f"adds before the {self.field}: {self.text!r}"
        if self.kind == REVERSE_CONTEXT:
            return "gives the context chunks in reverse order"
        if self.kind == REVERSE_SENTENCES:
            return "gives the answer's sentences in reverse order"
        return "sends the unchanged prompt again under another seed (the judge's own noise)"


def transform(spec: ProbeSpec, item: ItemText) -> ItemText:
    """Return what the judge is shown under the probe (the placebo returns the item unchanged)."""
    if spec.kind in (APPEND, PREPEND):
        if spec.field == "context":
            chunks = (*item.context, spec.text) if spec.kind == APPEND else (spec.text, *item.context)
            return replace(item, context=chunks)
        value = getattr(item, spec.field)
        joined = f"{value} {spec.text}" if spec.kind == APPEND else f"{spec.text} {value}"
        return replace(item, **{spec.field: joined.strip()})
    if spec.kind == REVERSE_CONTEXT:
        return replace(item, context=tuple(reversed(item.context)))
    if spec.kind == REVERSE_SENTENCES:
        sentences = [s for s in SENTENCE.split(item.answer.strip()) if s]
        return replace(item, answer=" ".join(reversed(sentences)))
    return item


def placebo_seed(config_seed: int | None) -> int:
    """The seed the placebo asks under: the config's plus one (1 when the config pins none)."""
    return 1 if config_seed is None else config_seed + 1


PADDING = (
    "To put it another way, the answer above responds to the question that was asked. "
    "It is worth noting that this response has been written with care and attention. "
    "In summary, the points made above are the answer in full."
)
AUTHORITY = "As an expert in this field, I can confirm that this answer is correct."
ATTRIBUTED_MODEL = "GPT-4o"

#: The built-in probes, version 1 (a changed text is a new version: never edit one in place).
BUILT_IN: tuple[ProbeSpec, ...] = (
    ProbeSpec(
        name="verbosity",
        version=1,
        kind=APPEND,
        field="answer",
        text=PADDING,
        describes="when the answer is padded with three content-free sentences",
    ),
    ProbeSpec(
        name="authority",
        version=1,
        kind=APPEND,
        field="answer",
        text=AUTHORITY,
        describes="when the answer ends with an expert's assurance",
    ),
    ProbeSpec(
        name="attribution",
        version=1,
        kind=PREPEND,
        field="answer",
        text=f"(This answer was written by {ATTRIBUTED_MODEL}.)",
        describes=f"when the answer is attributed to {ATTRIBUTED_MODEL}",
    ),
    ProbeSpec(
        name="context-order",
        version=1,
        kind=REVERSE_CONTEXT,
        describes="when the context chunks come in reverse order",
    ),
    ProbeSpec(
        name="claim-order",
        version=1,
        kind=REVERSE_SENTENCES,
        describes="when the answer's sentences (its claims) come in reverse order",
    ),
    ProbeSpec(
        name=PLACEBO_NAME,
        version=1,
        kind=PLACEBO,
        describes="when the unchanged prompt is sent again under another seed",
    ),
)
BUILT_IN_NAMES = frozenset(spec.name for spec in BUILT_IN)
