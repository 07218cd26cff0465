"""The labelling app's services: campaigns, assignment under concurrency, label import and export."""
