"""Load the demo: users, the demo eval set and a baseline and candidate run (safe to run twice)."""

import json

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from ...demo import write_demo_files
from ...services.evalsets import evalset_import
from ...services.runs import run_import


class Command(BaseCommand):
    help = "Create the demo users and the demo eval set and runs (idempotent) and print how to log in."

    def handle(self, *args, **options):
        call_command("create_demo_users", stdout=self.stdout)
        paths = write_demo_files(settings.VAR_DIR / "demo")
        result = evalset_import(path=paths["questions"], name="support-qa", description="Demo: customer support questions")
        self.stdout.write(result.message)
        judge = json.loads(paths["judge"].read_text())
        for rows, name, chunks, system in (
            ("base_rows", "chunks-512", "base_chunks", "base_system"),
            ("cand_rows", "chunks-256-rerank", "cand_chunks", "cand_system"),
        ):
            outcome = run_import(
                path=paths[rows], evalset="support-qa@1", name=name, judge_config=judge,
                system_config=json.loads(paths[system].read_text()), chunks_path=paths[chunks], k=5,
            )
            self.stdout.write(outcome.message)
        self.stdout.write("Try the gate: python manage.py gate --base chunks-512 --candidate chunks-256-rerank")
