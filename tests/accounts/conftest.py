"""The labelling tests' runs and campaigns, for the pages that show who labelled what."""

from tests.labelling.conftest import campaign, make_campaign, small_run, solo_campaign  # noqa: F401
