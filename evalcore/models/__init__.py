"""evalcore's models, one module per concept."""

from .jobs import Job

__all__ = ["Job"]
