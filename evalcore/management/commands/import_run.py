"""import_run FILE --evalset NAME[@VERSION] --name RUN: import a run's per-question rows."""

import argparse
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ...jobs.kinds import RunImportParams, request_run_import
from ...services.problems import UserFacingError
from ...services.readers import FORMATS, read_json_object_file
from ...services.trec import TIE_ORDERS
from ..cli import existing_file, run_import_cli


def _json_file(path: Path | None, what: str) -> dict | None:
    if path is None:
        return None
    try:
        return read_json_object_file(path, what)
    except UserFacingError as error:
        raise CommandError(str(error)) from None


def _cutoffs(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"cut-offs are positive integers separated by commas, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"cut-offs are positive integers separated by commas, got {text!r}")
    return values


class Command(BaseCommand):
    help = "Import a run's rows (one per question), score them, and store them (atomic and idempotent)."
    # A fresh process a file: the system checks would load every URL, view and the API schema (about a second
    # of each import's start) to decide nothing about the file. `manage.py check` runs them.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument(
            "file",
            type=Path,
            help="JSON Lines or a JSON array, CSV, Parquet, a Ragas table, DeepEval results or a TREC run (docs/formats.md)",
        )
        parser.add_argument("--evalset", required=True, help="NAME (latest version) or NAME@VERSION")
        parser.add_argument("--name", required=True, help="run name, unique within the eval set version")
        parser.add_argument("--format", choices=FORMATS)
        parser.add_argument(
            "--judge-config",
            type=Path,
            help="JSON: model, model_version, prompt, temperature, claim_splitting, library_versions",
        )
        parser.add_argument("--system-config", type=Path, help="JSON: retriever, reranker, chunking, prompt, ...")
        parser.add_argument("--chunks", type=Path, help="chunk map (id, doc, start, end) when gold is given as spans")
        parser.add_argument(
            "--k", type=int, help="chunks that reach the model (default: the most context_ids in a row)"
        )
        parser.add_argument(
            "--cutoffs",
            type=_cutoffs,
            default=[],
            help="further cut-offs, e.g. 5,10,100: recall, precision, nDCG and rr at each (TREC runs: k is the first)",
        )
        parser.add_argument(
            "--gain",
            choices=["exponential", "linear"],
            help="nDCG gain: 2^g-1 (default) or g (the default for TREC runs, as trec_eval)",
        )
        parser.add_argument(
            "--ties",
            choices=TIE_ORDERS,
            default="docno-desc",
            help="TREC runs: order of equal scores (trec_eval's docno-desc, ir_measures' docno-asc, or file order)",
        )
        parser.add_argument(
            "--fail-on-missing-topics",
            action="store_true",
            help="TREC runs: refuse a run topic the eval set lacks (default: skip and count it, as trec_eval)",
        )
        parser.add_argument("--description", default="")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")

    def handle(self, *args, **options):
        path: Path = options["file"]
        file = existing_file(path)
        chunks = existing_file(options["chunks"], "chunk map") if options["chunks"] else None
        params = RunImportParams(
            path=file,
            evalset=options["evalset"],
            name=options["name"],
            format=options["format"],
            display_name=path.name,
            k=options["k"],
            cutoffs=options["cutoffs"],
            gain=options["gain"],
            ties=options["ties"],
            missing_topics="fail" if options["fail_on_missing_topics"] else "skip",
            judge_config=_json_file(options["judge_config"], "judge config"),
            system_config=_json_file(options["system_config"], "system config"),
            chunks_path=chunks,
            description=options["description"],
        )
        run_import_cli(self, request_run_import, params=params, path=path, quiet=options["quiet"])
