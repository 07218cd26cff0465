"""import_labels FILE --campaign NAME: labels made elsewhere (our CSV or JSON Lines, Label Studio, Argilla,
Langfuse scores), atomic and idempotent."""

import argparse
from pathlib import Path

from django.core.management.base import BaseCommand

from evalcore.jobs.labelling_kinds import LabelImportParams, request_labels_import
from evalcore.management.cli import existing_file, run_import_cli

from ...services.label_sources import LABEL_FORMATS, MATCHES


def value_map(text: str) -> dict[str, str]:
    """``Supported=supported,Not supported=unsupported`` as a mapping."""
    pairs = [part.split("=", 1) for part in text.split(",") if part.strip()]
    if not pairs or any(len(pair) != 2 or not pair[0].strip() for pair in pairs):
        raise argparse.ArgumentTypeError(f"a value map is 'THEIRS=ours,...', got {text!r}")
    return {theirs.strip(): ours.strip() for theirs, ours in pairs}


class Command(BaseCommand):
    help = (
        "Import labels: our lines (question_id, claim_index, label, annotator, rationale) or a Label Studio, "
        "Argilla or Langfuse scores export (see docs/formats.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--format", choices=LABEL_FORMATS, help="default: from the extension and the content")
        parser.add_argument(
            "--label-field", help="the label's control tag (Label Studio), question (Argilla) or score name (Langfuse)"
        )
        parser.add_argument(
            "--value-map", type=value_map, default={}, help="the export's values as ours: 'Supported=supported,...'"
        )
        parser.add_argument("--users", type=Path, help="users table (id and username/email), to name user ids")
        parser.add_argument("--match", choices=MATCHES, default="auto", help="match items by question id or by text")
        parser.add_argument("--id-field", help="the task field holding the question id (default: question_id, qid)")
        parser.add_argument("--quiet", action="store_true")

    def handle(self, *args, **options):
        path: Path = options["file"]
        params = LabelImportParams(
            campaign=options["campaign"],
            path=existing_file(path),
            display_name=path.name,
            format=options["format"],
            label_field=options["label_field"],
            value_map=options["value_map"],
            users_path=existing_file(options["users"], "users") if options["users"] else None,
            match=options["match"],
            id_field=options["id_field"],
        )
        run_import_cli(self, request_labels_import, params=params, path=path, quiet=options["quiet"])
