"""A small typed client for the labelstudio-lite REST API (token authentication).

    from labelstudio_lite_client import Client
    lsl = Client("http://127.0.0.1:8000", token="...")
    lsl.import_evalset(questions_df, name="support")
    lsl.import_run(rows_df, evalset="support", name="chunks-256", k=5)
    gate = lsl.gate(base="chunks-512", candidate="chunks-256")
    gate.overall, gate.decisions

Imports and gates are jobs on the server: each call waits for its job, reporting progress to an
optional callback, and raises :class:`ApiError` with the server's problems (file, line and field)
when it is refused or fails.
"""

from .client import ApiError, Client, GateResult, ImportResult, Job

__all__ = ["ApiError", "Client", "GateResult", "ImportResult", "Job"]
