#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The test command: each of its steps a tools/blkctx process of its own,
counted and recorded, so that a step that dies still counts and the
closing "total:" line and the JSON results always agree.

The steps hold the cache's lock that test takes (common.lock). On a fresh
machine python3 came with the setup that tools/blkctx ran first
(blkctx.sh's bootstrap); the first step runs it again, in seconds.

A step reports its cases by appending "NAME PASSED FAILED SKIPPED" lines to
the file named by $BLKCTX_RESULTS (report_counts in tools/lib/blkctx.sh; die adds
"die 0 1 0").
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True

# after the line above: these import nothing that writes bytecode
import common  # noqa: E402
from procs import SIGNALS, Interrupted, say, stop  # noqa: E402

# (kind, step): "quiet" counts only a failure, and the run stops there;
# "one" is one pass or one failure; "cases" counts what the step reported,
# and one failure more when it failed with none counted or reported nothing.
PLAN = [
    ("quiet", "setup"),
    ("quiet", "prepare"),
    # after prepare: it reads the guests' KTAP with the tree's kunit_parser
    ("one", "selfcheck"),
    ("one", "checkpatch"),
    ("one", "mail-check"),
    ("cases", "kunit"),
    ("cases", "selftests"),
    ("cases", "bench-check"),
    # the README's main job: it fails when a file's writes miss their context
    ("one", "demo"),
    ("one", "pahole"),
    ("one", "warnings"),
]


def parse_report(line):
    # a line that is not NAME PASSED FAILED SKIPPED counts as a failure
    words = line.split()
    if len(words) != 4:
        return {"name": line.strip(), "passed": 0, "failed": 1, "skipped": 0}
    try:
        return {"name": words[0], "passed": int(words[1]),
                "failed": int(words[2]), "skipped": int(words[3])}
    except ValueError:
        return {"name": line.strip(), "passed": 0, "failed": 1, "skipped": 0}


class Run:
    def __init__(self, blkctx, results):
        self.blkctx = blkctx
        self.results = results
        self.records = []

    def step(self, kind, args):
        name = args[0]
        say("test: " + " ".join(args))
        before = len(self.read_results())
        start = time.monotonic()
        # the step holds the cache's lock through the descriptor test took
        lock = os.environ.get("BLKCTX_LOCK_FD", "")
        proc = None
        try:
            # a signal while it starts must not leave it running unseen
            with SIGNALS.deferred():
                try:
                    proc = subprocess.Popen([self.blkctx] + args, stdin=subprocess.DEVNULL,
                                            start_new_session=True,
                                            pass_fds=(int(lock),) if lock.isdigit() else ())
                except (OSError, ValueError) as e:
                    say("test: cannot run %s: %s" % (name, e))
            status = proc.wait() if proc else 127
        except Interrupted as e:
            if proc:
                stop(proc, e.signum, "test: the step")
            raise
        if status < 0:
            status = 128 - status
        reports = [parse_report(line) for line in self.read_results()[before:]]
        passed = sum(r["passed"] for r in reports)
        failed = sum(r["failed"] for r in reports)
        skipped = sum(r["skipped"] for r in reports)
        if kind == "cases":
            if passed + failed + skipped == 0:
                say("test: %s reported no result" % name)
                failed = 1
            elif status and not failed:
                failed = 1
            if failed and not status:
                status = 1
        else:
            passed = 1 if kind == "one" and not status else 0
            failed = 1 if status else 0
            skipped = 0
        self.records.append({"step": name, "status": status, "passed": passed,
                             "failed": failed, "skipped": skipped,
                             "seconds": round(time.monotonic() - start),
                             "reports": reports})
        if status:
            say("test: %s FAILED" % name)
        return status == 0

    def read_results(self):
        with open(self.results, errors="replace") as f:
            return f.readlines()

    def total(self, json_path):
        """The closing line, which CI reads, and the same results with each
        step's record as JSON; the line comes even when the JSON cannot be
        written, which then fails the run."""
        totals = {key: sum(r[key] for r in self.records)
                  for key in ("passed", "failed", "skipped")}
        ok = True
        with SIGNALS.deferred():
            try:
                os.makedirs(os.path.dirname(json_path) or ".", exist_ok=True)
                with open(json_path + ".new", "w") as f:
                    json.dump(dict(totals, steps=self.records), f, indent=4)
                    f.write("\n")
                os.replace(json_path + ".new", json_path)
                say("test: results as JSON in " + json_path)
            except OSError as e:
                say("test: cannot write the JSON results: %s" % e)
                ok = False
            try:
                print("total: %(passed)d passed, %(failed)d failed, %(skipped)d skipped"
                      % totals, flush=True)
            except OSError as e:
                say("test: cannot print the closing line: %s" % e)
                ok = False
            failed = [r["step"] for r in self.records if r["status"]]
            if failed:
                say("test: FAILED: " + " ".join(failed))
            elif ok:
                say("test: everything passed")
        return ok and not failed


def run_plan(blkctx, json_path, force_prepare):
    """Every step of PLAN through BLKCTX, the closing line, the JSON in
    JSON_PATH; the status of the whole run."""
    results = None
    before = os.environ.get("BLKCTX_RESULTS")
    try:
        SIGNALS.install()
        with SIGNALS.deferred():
            fd, results = tempfile.mkstemp(prefix="blkctx-results.")
            os.close(fd)
        os.environ["BLKCTX_RESULTS"] = results
        run = Run(blkctx, results)
        ok = True
        for kind, name in PLAN:
            args = [name] + (["--force"] if name == "prepare" and force_prepare else [])
            if not run.step(kind, args):
                ok = False
                # without the packages and the tree no other step can run
                if kind == "quiet":
                    break
        return 0 if run.total(json_path) and ok else 1
    except Interrupted as e:
        say("interrupted" if e.signum == signal.SIGINT else "terminated")
        return 128 + e.signum
    finally:
        # the run is over: a signal now has nothing left to stop
        SIGNALS.ignoring = True
        if results:
            try:
                os.unlink(results)
            except OSError:
                pass
        # a failure reported after the run goes where it went before, not
        # into a file made again in TMPDIR
        if before is None:
            os.environ.pop("BLKCTX_RESULTS", None)
        else:
            os.environ["BLKCTX_RESULTS"] = before


def main(argv, lock=True):
    """The test command (ARGV is ["test"]): its steps through tools/blkctx
    (BLKCTX_SELF replaces it, for the selfcheck), the JSON in the cache's
    build/test-results.json. CI tests the patch files, whatever an earlier
    session left in the tree: prepare --force."""
    if argv != ["test"]:
        print("usage: runner.py test", file=sys.stderr)
        return 2

    def body():
        if lock:
            common.lock("test")
        blkctx = os.environ.get("BLKCTX_SELF") or os.path.join(common.REPO, "tools", "blkctx")
        return run_plan(blkctx, os.path.join(common.BUILD, "test-results.json"),
                        os.environ.get("CI") == "true")

    return common.run_command("test", body)


def script_main():
    """runner.py --blkctx B --json J: the steps through B, without the lock
    (a selfcheck case)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blkctx", required=True, help="the tools/blkctx that runs each step")
    parser.add_argument("--json", required=True, help="where the JSON results go")
    parser.add_argument("--force-prepare", action="store_true",
                        help="prepare --force (CI tests the patch files, whatever the tree holds)")
    opts = parser.parse_args()
    return run_plan(opts.blkctx, opts.json, opts.force_prepare)


if __name__ == "__main__":
    sys.exit(script_main())
