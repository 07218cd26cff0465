"""Load the demo: users, the demo eval set and runs, and labelling campaigns (safe to run twice)."""

import json

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from evalcore.demo import write_demo_files
from evalcore.services.evalsets import evalset_import
from evalcore.services.runs import run_import

from ...demo import load_labelling_demo


class Command(BaseCommand):
    help = "Create the demo users, eval set, runs and labelling campaigns (idempotent) and print how to log in."

    def add_arguments(self, parser):
        parser.add_argument(
            "--url",
            default="http://127.0.0.1:8000",
            help="where the app will be served, for the addresses printed (./dev run passes its HOST and PORT)",
        )

    def handle(self, *args, **options):
        folder = settings.VAR_DIR / "demo"
        paths = write_demo_files(folder)
        result = evalset_import(
            path=paths["questions"], name="support-qa", description="Demo: customer support questions"
        )
        self.stdout.write(result.message)
        runs = {}
        for rows, name, chunks, system, judge in (
            ("base_rows", "chunks-512", "base_chunks", "base_system", "judge"),
            ("cand_rows", "chunks-256-rerank", "cand_chunks", "cand_system", "judge"),
            ("base_rows_v2", "chunks-512-judge-v2", "base_chunks", "base_system", "tuned_judge"),
            ("cand_rows_v2", "chunks-256-rerank-judge-v2", "cand_chunks", "cand_system", "tuned_judge"),
        ):
            outcome = run_import(
                path=paths[rows],
                evalset="support-qa@1",
                name=name,
                judge_config=json.loads(paths[judge].read_text()),
                system_config=json.loads(paths[system].read_text()),
                chunks_path=paths[chunks],
                k=5,
                description="re-scored by the tuned judge (judge-v2)" if judge == "tuned_judge" else "",
            )
            runs[name] = outcome.run
            self.stdout.write(outcome.message)
        call_command("create_demo_users", stdout=self.stdout)
        for line in load_labelling_demo(paths, runs["chunks-256-rerank"], baseline=runs["chunks-512"]):
            self.stdout.write(line)
        self.stdout.write("")
        self.stdout.write(
            "Try: the gate            .venv/bin/python manage.py gate --base chunks-512 --candidate chunks-256-rerank"
        )
        self.stdout.write("     the judge report    .venv/bin/python manage.py judge_report faithfulness-claims")
        self.stdout.write(
            "     with the tuned judge .venv/bin/python manage.py gate --base chunks-512-judge-v2 --candidate chunks-256-rerank-judge-v2"
        )
        self.stdout.write(f"     label as ann1       {options['url'].rstrip('/')}/label/demo-claims/")
