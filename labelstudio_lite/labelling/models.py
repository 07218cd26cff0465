"""Labelling campaigns, items, assignments and labels (see the labelling issue)."""
