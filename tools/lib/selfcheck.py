# SPDX-License-Identifier: GPL-2.0
"""tools/blkctx selfcheck: tests of the tools themselves, in about a
minute, with no build or guest: each parser and check on canned input
(tools/selfcheck/) or on small scratch trees, and a lint of the shell that
remains.

The cases are unittest tests in tools/lib/tests/test_*.py. A case is a
subTest named by what it checks, or a test method named by its docstring's
first line; each prints a line "ok NAME" or "FAILED NAME" (with what went
wrong, indented), and the last line counts them."""

import argparse
import os
import sys
import time
import unittest

sys.dont_write_bytecode = True

LIB = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(LIB, "tests")


def case_name(test, subtest=None):
    if subtest is not None:
        # the text given to subTest(); unittest keeps it only there
        return subtest._message if isinstance(subtest._message, str) else subtest.id()
    return (test.shortDescription() or test.id()).strip()


class Result(unittest.TestResult):
    """Prints each case as it ends; counts the cases, a test method with
    subtests counting only them (and itself if it fails outside them)."""

    def __init__(self, stream):
        super().__init__()
        self.stream = stream
        self.passed = 0
        self.failed = 0
        self.with_subtests = set()

    def record(self, name, error=None):
        if error is None:
            self.passed += 1
            print("ok       %s" % name, file=self.stream)
        else:
            self.failed += 1
            print("FAILED   %s" % name, file=self.stream)
            for line in error.rstrip("\n").split("\n"):
                print("    " + line, file=self.stream)
        # in order with what the cases' children print, and kept if the
        # run is killed
        self.stream.flush()

    def detail(self, test, err):
        exctype, value, _ = err
        if issubclass(exctype, AssertionError):
            return str(value)
        return self._exc_info_to_string(err, test)

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        self.with_subtests.add(test.id())
        self.record(case_name(test, subtest), None if err is None else self.detail(test, err))

    def addSuccess(self, test):
        super().addSuccess(test)
        if test.id() not in self.with_subtests:
            self.record(case_name(test))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.record(case_name(test), self.detail(test, err))

    def addError(self, test, err):
        super().addError(test, err)
        self.record(case_name(test), self.detail(test, err))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        # a case that cannot run is not a pass
        self.record(case_name(test), "skipped: %s" % reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        # a case that fails on purpose guards nothing
        self.record(case_name(test), "expected to fail: %s" % self.detail(test, err))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.record(case_name(test), "expected to fail, but passed")


def main(argv):
    parser = argparse.ArgumentParser(prog="tools/blkctx selfcheck", description=__doc__)
    parser.add_argument("pattern", nargs="*",
                        help="only the test modules, classes or methods whose id has one of these")
    args = parser.parse_args(argv[1:])
    start = time.monotonic()
    # the cases set what they test: nothing of the caller's settings (its
    # cases fail on purpose, which must not count in a test run either)
    for name in list(os.environ):
        if name.startswith("BLKCTX_") and name != "BLKCTX_CACHE" or name == "CI":
            del os.environ[name]
    # nor of the user's git configuration (commit.gpgsign and the like);
    # the scratch trees' commits are the series' (export and mail read it)
    os.environ.update(GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    for who in ("AUTHOR", "COMMITTER"):
        os.environ["GIT_%s_NAME" % who] = "blkctx developers"
        os.environ["GIT_%s_EMAIL" % who] = "devel@blkctx.invalid"
    environ = dict(os.environ)
    loader = unittest.TestLoader()
    suite = loader.discover(TESTS, top_level_dir=TESTS)
    # what the modules set when imported (common's CCACHE_DIR) is not the
    # cases' children's
    os.environ.clear()
    os.environ.update(environ)
    if args.pattern:
        # a module that cannot be imported stays, whatever is matched
        suite = unittest.TestSuite(
            t for t in flatten(suite)
            if any(p in t.id() for p in args.pattern) or
            isinstance(t, unittest.loader._FailedTest))
    result = Result(sys.stdout)
    suite.run(result)
    print("selfcheck: %d passed, %d failed (%ds)"
          % (result.passed, result.failed, time.monotonic() - start))
    return 0 if result.failed == 0 and result.passed > 0 else 1


def flatten(suite):
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from flatten(test)
        else:
            yield test


if __name__ == "__main__":
    sys.exit(main(["selfcheck"] + sys.argv[1:]))
