"""evalcore's services: every write goes through one of these (views, API, CLI and tasks are thin)."""
