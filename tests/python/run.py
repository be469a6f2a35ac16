"""Runs the Python tests (unittest discovery in this folder) and prints
one line per test in the suite's format: "PASS name", "FAIL name: why",
"SKIP name: why"; exits 1 when any failed."""
import os
import sys
import unittest


class LineResult(unittest.TestResult):
    def addSuccess(self, test):
        super().addSuccess(test)
        print("PASS py_%s" % test._testMethodName, flush=True)

    def _fail(self, test, err, kind):
        msg = self._exc_info_to_string(err, test).strip().splitlines()
        print("FAIL py_%s: %s: %s" % (test._testMethodName, kind, msg[-1] if msg else ""),
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
        print("SKIP py_%s: %s" % (test._testMethodName, reason), flush=True)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    suite = unittest.defaultTestLoader.discover(here, pattern="test_*.py")
    result = LineResult()
    suite.run(result)
    sys.exit(0 if result.wasSuccessful() else 1)
