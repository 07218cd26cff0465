"""The labelling app's whole state as plain values, to prove a request or a run of requests changed nothing."""

from __future__ import annotations

from typing import Any


def labelling_state() -> dict[str, Any]:
    """Every row of every labelling table, as values (leases, labels, exports, views, slot counters...)."""
    from django.apps import apps

    return {
        model.__name__: sorted(map(str, model.objects.values_list()))
        for model in apps.get_app_config("labelling").get_models()
    }
