"""labelstudio-lite: the Django project package and the labelling app."""

from .celery import app as celery_app

__all__ = ["celery_app"]
