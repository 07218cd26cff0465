from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView

from . import views

handler404 = "labelstudio_lite.views.not_found"
handler500 = "labelstudio_lite.views.server_error"

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("", include("evalcore.urls")),
    path("", include("labelstudio_lite.labelling.urls")),
    path("api/", include("evalcore.api_urls")),
    path("api/", include("labelstudio_lite.labelling.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Redoc styles itself with <style> elements and searches in a blob: worker: allowed on its page only
    path(
        "api/docs/",
        csp_update({"style-src": [UNSAFE_INLINE], "worker-src": ["blob:"]})(
            SpectacularRedocView.as_view(url_name="api-schema", template_name="api_docs.html")
        ),
        name="api-docs",
    ),
]
