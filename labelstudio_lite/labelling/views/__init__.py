"""Labelling pages: the annotators' labelling page and the eval owners' campaign pages."""
