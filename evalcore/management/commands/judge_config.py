"""judge_config create FILE | show NAME [--json] | list: runnable judge configs from the command line."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ...models import JudgeConfig
from ...services.judge_configs import judge_config_as_dict, judge_config_create, judge_config_named
from ...services.judge_fitness import judge_certificates, judge_validation, judge_validations
from ...services.problems import UserFacingError
from .import_run import _json_file


class Command(BaseCommand):
    help = "Create a runnable judge config from a JSON file, show one (with who validated it), or list them."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create (or update the endpoint of) a named judge config")
        create.add_argument(
            "file", type=Path, help="JSON: name, endpoint_kind, base_url, api_key_env, model, prompt, ..."
        )
        create.add_argument("--name", help="the config's name (default: the file's name field)")
        show = sub.add_parser("show", help="a config's pinned content, endpoint, validations and runs")
        show.add_argument("name", help="NAME, #ID or a hash prefix")
        show.add_argument("--json", action="store_true")
        sub.add_parser("list", help="every judge config, newest first")

    def handle(self, *args, **options):
        try:
            if options["action"] == "create":
                raw = _json_file(options["file"], "judge config")
                result = judge_config_create(raw=raw, name=options["name"], display=str(options["file"]))
                self.stdout.write(result.message)
                self.stdout.write(f"id {result.config.pk}, hash {result.config.config_hash}")
            elif options["action"] == "show":
                self._show(judge_config_named(options["name"]), as_json=options["json"])
            else:
                for config in JudgeConfig.objects.order_by("-created_at", "-id"):
                    where = config.get_endpoint_kind_display() if config.endpoint_kind else "ran elsewhere"
                    self.stdout.write(f"{config.label:<32} {config.config_hash[:12]}  {config.model:<24} {where}")
        except UserFacingError as error:
            raise CommandError(str(error)) from None

    def _show(self, config: JudgeConfig, *, as_json: bool) -> None:
        data = judge_config_as_dict(config)
        validation = judge_validation(config)
        measurements = judge_validations(config)
        certificates = judge_certificates(config)
        if as_json:
            payload = {
                **data,
                "validation": validation.as_dict(),
                "measurements": [m.as_dict() for m in measurements],
                "certificates": certificates,
            }
            self.stdout.write(json.dumps(payload, indent=2, default=str))
            return
        self.stdout.write(f"judge config {config.label} · hash {config.config_hash}")
        self.stdout.write(f"validation: {validation.reason}")
        for m in measurements:
            self.stdout.write(f"  measured by campaign {m.campaign} ({m.source}): {m.reason}")
        self.stdout.write(f"certificates: {len(certificates) or 'none yet'}")
        for cert in certificates:
            self.stdout.write(f"  {cert['line']}")
        for key, value in data.items():
            if key not in ("name", "config_hash", "few_shot_examples"):
                self.stdout.write(f"{key}: {json.dumps(value, ensure_ascii=False)}")
        for run in config.runs.select_related("version__eval_set"):
            self.stdout.write(f"scored run {run.name} on {run.version.label}")
