from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "labelstudio_lite.accounts"
    label = "accounts"
    verbose_name = "Accounts and roles"
