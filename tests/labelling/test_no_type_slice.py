"""Questions without a type form the "(no type)" slice in the judge report, its certificates and the gate
alike, so a per-slice certificate on them reaches the gate's decision on that slice."""

from __future__ import annotations

from evalcore.selectors import run_rows_frame
from evalcore.services.judge_fitness import judge_validation
from labelstudio_lite.labelling.services.judge_report import judge_report
from tests import factories

from .test_certificates import every_fourth_unsupported, label_all


def test_items_without_a_question_type_are_the_gates_no_type_slice(tmp_path, owner, annotator):
    run = factories.make_marked_run(
        folder=tmp_path / "typeless", n=180, types=("policy", "", "billing"), verdicts=every_fourth_unsupported
    )
    campaign = factories.make_campaign(run=run, name="c", annotators=[annotator], user=owner)
    label_all(campaign, annotator)

    gate_slices = set(run_rows_frame(run)["type"])
    assert gate_slices == {"policy", "(no type)", "billing"}
    report = judge_report(campaign)
    assert {s.slice for s in report.slices} == gate_slices
    assert set(report.slice_certificates) == gate_slices  # 60 items, 15 failures each: enough for a certificate
    validation = judge_validation(run.judge_config)
    assert {s["slice"] for s in validation.slices} == gate_slices
    assert validation.slice_untrusted("(no type)") is None  # trusted there: the gate lets the data decide
