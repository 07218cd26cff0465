"""import_evalset FILE --name NAME: create a frozen eval set version from a file."""

from pathlib import Path

from django.core.management.base import BaseCommand

from ...jobs.kinds import EvalSetImportParams, request_evalset_import
from ...services.readers import FORMATS
from ..cli import existing_file, run_import_cli


class Command(BaseCommand):
    help = "Import questions as a new frozen version of an eval set (atomic; importing the same content twice creates nothing)."
    # A fresh process a file: the system checks would load every URL, view and the API schema (about a second
    # of each import's start) to decide nothing about the file. `manage.py check` runs them.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument(
            "file",
            type=Path,
            help="JSON Lines or a JSON array, CSV, Parquet, a Ragas table, DeepEval goldens, Langfuse items, LangSmith examples or TREC qrels (docs/formats.md)",
        )
        parser.add_argument("--name", required=True, help="eval set name (letters, digits, - and _)")
        parser.add_argument(
            "--format", choices=FORMATS, help="file format (default: from the extension and the content)"
        )
        parser.add_argument(
            "--extend",
            action="store_true",
            help="add the file's questions to the latest version (or --base) instead of replacing them",
        )
        parser.add_argument("--base", type=int, help="the version to extend (default: the latest)")
        parser.add_argument(
            "--topics", type=Path, help="TREC topics: 'qid<TAB>text' lines or an SGML topics file, for qrels"
        )
        parser.add_argument("--description", default="")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")

    def handle(self, *args, **options):
        path: Path = options["file"]
        file = existing_file(path)
        topics = existing_file(options["topics"], "topics") if options["topics"] else None
        params = EvalSetImportParams(
            path=file,
            name=options["name"],
            format=options["format"],
            display_name=path.name,
            mode="extend" if options["extend"] else "replace",
            base_version=options["base"],
            topics_path=topics,
            description=options["description"],
        )
        result = run_import_cli(self, request_evalset_import, params=params, path=path, quiet=options["quiet"])
        self.stdout.write(f"version: {result['eval_set']}@{result['version']}")
