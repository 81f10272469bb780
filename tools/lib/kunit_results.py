#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Count the results kunit.py wrote as JSON (--json=FILE) for a run on ARCH
that exited with STATUS, and judge the run.

A crashed case ("ERROR") counts as failed, and so does a run with no case,
no JSON (the build failed), every case skipped, or a failing status that no
case explains (kunit.py's parse errors); with --log, a report of the
kernel's error detectors in the kernel's console (kunit.py's test.log) is
one failure more, but for those --allow matches.  Prints "passed failed
skipped"; says each failure on standard error.
"""

import argparse
import json
import sys

sys.dont_write_bytecode = True

# after the line above: guest.py imports nothing that writes bytecode
import guest  # noqa: E402


class Counts:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.failures = []

    def fail(self, what):
        self.failed += 1
        self.failures.append(what)

    def walk(self, group, prefix):
        """Count GROUP's cases and its sub-groups', named by their path."""
        name = group.get("name", "")
        if name and name != "KUnit Test Group":
            prefix = prefix + [name]
        for case in group.get("test_cases", []):
            status = case.get("status")
            what = ".".join(prefix + [case.get("name") or "(a case that never reported)"])
            if status == "PASS":
                self.passed += 1
            elif status == "SKIP":
                self.skipped += 1
            else:
                self.fail(what + (" (crashed)" if status == "ERROR" else ""))
        for sub in group.get("sub_groups", []):
            self.walk(sub, prefix)


def count(path, status):
    """The Counts of the JSON at PATH, written by a kunit.py that exited
    with STATUS."""
    counts = Counts()
    try:
        with open(path) as f:
            results = json.load(f)
    except (OSError, ValueError):
        counts.fail("kunit.py wrote no results (the build or the boot failed?)")
        return counts
    try:
        counts.walk(results, [])
    except (AttributeError, TypeError):
        fresh = Counts()
        fresh.fail("kunit.py's JSON is not in the form it writes: %s" % path)
        return fresh
    if counts.passed + counts.failed + counts.skipped == 0:
        counts.fail("kunit.py ran no test")
    elif counts.passed == 0 and counts.failed == 0:
        counts.fail("every case skipped")
    elif status != 0 and counts.failed == 0:
        counts.fail("kunit.py failed (status %d) with every case passed: see its errors" % status)
    return counts


def judge(arch, path, status, log=None, allow=None):
    """count(PATH, STATUS), each failure said on standard error; with LOG
    (the kernel's console), its reports of the kernel's detectors but those
    ALLOW matches are one failure more."""
    counts = count(path, status)
    for what in counts.failures:
        print("kunit: %s: FAILED %s" % (arch, what), file=sys.stderr)
    if log:
        try:
            lines = guest.read_lines(log)
        except OSError as e:
            print("kunit: %s: FAILED cannot read %s: %s" % (arch, log, e.strerror),
                  file=sys.stderr)
            counts.failed += 1
            lines = []
        counts.failed += guest.say_reports("kunit: %s: " % arch, log,
                                           guest.kernel_reports(lines, allow))
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arch", help="the architecture, for the messages")
    parser.add_argument("json", help="the file kunit.py --json= wrote")
    parser.add_argument("status", type=int, help="kunit.py's exit status")
    parser.add_argument("--log", help="the kernel's console: kunit.py's test.log")
    parser.add_argument("--allow", help="a regular expression of reports that are expected")
    opts = parser.parse_args()
    counts = judge(opts.arch, opts.json, opts.status, opts.log, opts.allow)
    print(counts.passed, counts.failed, counts.skipped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
