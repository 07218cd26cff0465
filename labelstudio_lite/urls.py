from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from . import health, views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", health.metrics, name="metrics"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("favicon.ico", views.favicon, name="favicon"),
    path("", include("labelstudio_lite.accounts.urls")),
    path("", include("evalcore.urls")),
    path("", include("labelstudio_lite.labelling.urls")),
    path("api/", include("evalcore.api_urls")),
    path("api/", include("labelstudio_lite.labelling.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI with its start-up script served as a file (no inline script): it passes the CSP as is
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api_docs.html"),
        name="api-docs",
    ),
]

handler400 = "labelstudio_lite.views.bad_request"
handler403 = "labelstudio_lite.views.permission_denied"
handler404 = "labelstudio_lite.views.page_not_found"
handler500 = "labelstudio_lite.views.server_error"
