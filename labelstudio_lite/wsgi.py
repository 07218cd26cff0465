"""WSGI entry point (gunicorn labelstudio_lite.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelstudio_lite.settings")
application = get_wsgi_application()
