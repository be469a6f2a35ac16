"""Runs the Python tests (unittest discovery in this folder) and prints
one line per test in the suite's format: "PASS name", "FAIL name: why",
"SKIP name: why"; exits 1 when any failed.

    run.py [PATTERN [PREFIX]]

PATTERN: the test files (default test_*.py); PREFIX: of the names (default
py_), telling apart a second run with another interpreter (py_torch2_)."""
import os
import sys
import unittest

PREFIX = "py_"


class LineResult(unittest.TestResult):
    def addSuccess(self, test):
        super().addSuccess(test)
        print("PASS %s%s" % (PREFIX, test._testMethodName), flush=True)

    def _fail(self, test, err, kind):
        msg = self._exc_info_to_string(err, test).strip().splitlines()
        print("FAIL %s%s: %s: %s" % (PREFIX, test._testMethodName, kind, msg[-1] if msg else ""),
              flush=True)
        print("\n".join("    " + l for l in msg[-12:]), flush=True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._fail(test, err, "failure")

    def addError(self, test, err):
        super().addError(test, err)
        self._fail(test, err, "error")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        print("SKIP %s%s: %s" % (PREFIX, test._testMethodName, reason), flush=True)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    pattern = sys.argv[1] if len(sys.argv) > 1 else "test_*.py"
    PREFIX = sys.argv[2] if len(sys.argv) > 2 else PREFIX
    suite = unittest.defaultTestLoader.discover(here, pattern=pattern)
    result = LineResult()
    suite.run(result)
    sys.exit(0 if result.wasSuccessful() else 1)
