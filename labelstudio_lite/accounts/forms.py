"""Forms of the People and Access pages: what each POST takes, checked before a service is called."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import SetPasswordForm

from labelstudio_lite.labelling.models import Campaign

ACCESS_CHOICES = [
    ("link", "A one-time link they open to set their own password"),
    ("password", "A password made now, that you pass on"),
]


class InviteForm(forms.Form):
    username = forms.CharField(
        max_length=150, help_text="Letters, digits and @ . + - _ only; they log in with it.", strip=True
    )
    email = forms.EmailField(required=False, help_text="Kept for your records; nothing is sent by email.")
    role = forms.ChoiceField(
        choices=[("annotator", "Annotator: labels, blind to the judge"), ("owner", "Eval owner: everything")],
        initial="annotator",
        widget=forms.RadioSelect,
    )
    access = forms.ChoiceField(
        choices=ACCESS_CHOICES, initial="link", widget=forms.RadioSelect, label="How they get in (shown once)"
    )
    campaigns = forms.ModelMultipleChoiceField(
        queryset=Campaign.objects.order_by("-created_at"),
        required=False,
        label="Campaigns they label",
        help_text="Hold Ctrl (⌘ on a Mac) to choose several; you can add them to campaigns later too.",
        widget=forms.SelectMultiple(attrs={"size": 4}),
    )


class PersonActionForm(forms.Form):
    action = forms.ChoiceField(
        choices=[
            ("deactivate", "Deactivate"),
            ("reactivate", "Bring back"),
            ("reset-link", "Reset the password with a one-time link"),
            ("reset-password", "Reset the password to a new one"),
            ("invite-again", "A new invitation link"),
        ]
    )


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, label="What it is for", help_text="A CI job, a notebook: so you know which to revoke later."
    )


class LinkPasswordForm(SetPasswordForm):
    """Set one's password through a one-time link (the password validators apply)."""
