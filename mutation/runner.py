"""One pytest session for every mutant: collect the tests once, fork per mutant, run its tests there.

mutmut 3.8's runner forks per mutant and, in the child, starts pytest from nothing: parse the options,
load the plugins (Django's among them), collect the test files, select the mutant's tests. Measured on
``multiplicity.py`` (101 mutants, one process) that start-up is about 0.25 s of the 0.28 s a mutant
takes; over 4,600 mutants it was most of the run. Here the parent opens one pytest session and collects
the mutation tests once (after mutmut's stats, clean and forced-fail runs, which still go through plain
``pytest.main``); each forked child switches its mutant on and runs the protocol of its selected items
(mutmut passes them fastest first) in that session, stopping at the first failure or error. What a test
sees is what it saw before: the same items, fixtures set up in the child, the same mutant switch.

Before the first mutant the runner checks itself on the 20 fastest tests that call mutated code: they
must pass unmutated (or every mutant would look killed) and fail under mutmut's forced-fail switch, which
makes every mutated function raise (or no mutant could be killed); either way the run stops.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from mutmut.runners.harness import PytestRunner
from mutmut.utils.file_utils import change_cwd
from mutmut.workers.isolation import ForkRunner


class SessionRunner(PytestRunner):
    """mutmut's pytest runner whose per-mutant runs use items collected once in the parent."""

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[str, Any] | None = None
        self.failed = False

    # pytest hook (this object is registered as a plugin of the session): any failed phase is a kill
    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed:
            self.failed = True

    def open_session(self) -> None:
        """Configure pytest and collect the mutation tests once, in the parent, in ``mutants/``."""
        from _pytest.config import _prepareconfig
        from _pytest.main import Session

        args = ["--rootdir=.", "--tb=no", "-qq", "--capture=no", "-p", "no:randomly", "-p", "no:random-order"]
        args += self._pytest_add_cli_args_test_selection + self._pytest_add_cli_args
        with change_cwd("mutants"):
            config = _prepareconfig(args, plugins=[self])
            config._do_configure()
            session = Session.from_config(config)
            config.hook.pytest_sessionstart(session=session)
            config.hook.pytest_collection(session=session)
            if session.testsfailed:
                raise SystemExit("error: collecting the mutation tests failed")
        self.items = {item.nodeid: item for item in session.items}

    def run_tests(self, *, mutant_name: str | None, tests: Any) -> int:
        names = list(tests)
        if self.items is None or not names or any(name not in self.items for name in names):
            return super().run_tests(mutant_name=mutant_name, tests=names)  # before the session: plain pytest
        items = [self.items[name] for name in names]
        self.failed = False
        with change_cwd("mutants"):
            for index, item in enumerate(items):
                following = items[index + 1] if index + 1 < len(items) else None
                item.ihook.pytest_runtest_protocol(item=item, nextitem=following)
                if self.failed:
                    return 1
        return 0


class SessionForkRunner(ForkRunner):
    """mutmut's fork-per-mutant runner, opening the shared session before the first fork."""

    test_runner: SessionRunner

    def startup(self) -> None:
        self.test_runner.open_session()
        self.self_check()
        super().startup()

    def self_check(self) -> None:
        from mutmut.state import state

        runner = self.test_runner
        assert runner.items is not None
        covering = set().union(*state().tests_by_mangled_function_name.values()) & set(runner.items)
        sample = sorted(covering, key=lambda name: (state().duration_by_test[name], name))[:20]
        if not sample:
            raise SystemExit("error: no collected test calls a mutated function")
        if _in_child(runner, "", sample) != 0:
            raise SystemExit("error: the mutation tests fail on the unmutated code in the shared session")
        if _in_child(runner, "fail", sample) == 0:
            raise SystemExit("error: the shared session does not see mutmut's forced failure")


def _in_child(runner: SessionRunner, mutant: str, tests: list[str]) -> int:
    from mutmut.mutation.trampoline import set_mutant_under_test

    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (the child exits at once)
            set_mutant_under_test(mutant)
            code = runner.run_tests(mutant_name=mutant, tests=tests)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def get_mutant_runner(max_workers: int = 1) -> ForkRunner:
    """Stands in for :func:`mutmut.workers.isolation.get_mutant_runner` (fork isolation, as configured)."""
    if max_workers < 1:
        raise ValueError("max_workers must be at least 1")
    runner = SessionRunner()
    runner.prepare_main_test_run()
    from mutmut.configuration import config

    return SessionForkRunner(max_workers=max_workers, test_runner=runner, debug=config().debug)
