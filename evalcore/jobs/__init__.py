"""Jobs: long work (imports, gates, judge runs) run as Celery tasks, with progress that pages and the CLI show.

Everything about jobs lives here; imports run one way, top to bottom (a test walks the graph):

* :mod:`.errors` and :mod:`.registry`: what can go wrong, and the job kinds (name, label, parameters,
  handler); no Django model import, so :class:`evalcore.models.Job` takes its kinds' labels from here;
* :mod:`.liveness`: which process runs a job, whether it is gone, and :func:`~.liveness.job_reap`;
* :mod:`.runner`: :func:`~.runner.job_run` runs a job to the end (claim, progress, result, error), and cancel;
* :mod:`.task`: the Celery task ``evalcore.run_job`` (thin: it calls the runner);
* :mod:`.dispatch`: ask for a job, hand its task to the broker, send again what never reached it, follow it;
* :mod:`.worker`: what a starting worker does (recover dead jobs, resume stale judge jobs);
* :mod:`.kinds` (evalcore's) and :mod:`.labelling_kinds` (the labelling app's): each kind's frozen
  parameters, the request function every door calls, and the handler that calls the kind's service.
  Each app's ``ready()`` imports its kinds module, which registers them.

This package's ``__init__`` imports nothing, so importing :mod:`.registry` from the model loads nothing else.
"""
