"""The labelling app's services: every write, one typed keyword-only function per operation.

* ``campaigns``: create a campaign, (un)assign annotators, set the fit thresholds, sample a fresh held-out set;
* ``assignment``: hand out items under leases and take labels (next item, answer, skip, change a label);
* ``adjudication``: an eval owner's final label;
* ``label_import`` and ``verdicts``: import labels made elsewhere and a new judge config's verdicts,
  both reading item lines through ``item_rows``;
* ``exports``: label and disagreement exports, their records, leakage and the spent held-out split;
* ``judge_report``, ``judge_stats`` and ``remeasure``: the judge against people, and a new judge against the old.

Pages, the API, commands and job handlers call these and translate; they write nothing themselves.
"""
