"""Grading untrusted programs: trusted test code runs in the grader, the program in a sandbox,
and only plain data crosses between them (see :mod:`verifiers.grading.run`)."""

from verifiers.grading.remote import ProgramAborted, Remote
from verifiers.grading.run import Outcome, SuiteRun, run_test_code, run_unittest_modules

__all__ = [
    "Outcome",
    "ProgramAborted",
    "Remote",
    "SuiteRun",
    "run_test_code",
    "run_unittest_modules",
]
