from django.urls import path

import labelstudio_lite.rest  # noqa: F401 (registers the id path converter)

from . import views

app_name = "accounts"

urlpatterns = [
    path("people/", views.people, name="people"),
    path("people/<id:user_id>/", views.person, name="person"),
    path("people/<id:user_id>/access/", views.person_access, name="person-access"),
    path("account/tokens/", views.tokens, name="tokens"),
    path("account/tokens/<id:token_id>/revoke/", views.token_revoke_view, name="token-revoke"),
    path("accounts/link/<str:token>/", views.link, name="link"),
]
