# SPDX-License-Identifier: GPL-2.0
"""tools/lib/runner.py, the test command: its steps counted and recorded
(the closing line and the JSON), the cache's lock passed on, and what a
signal stops; the steps through a fake tools/blkctx, a bash script that
sources blkctx.sh for report_counts and die."""

import json
import os
import shlex
import signal
import subprocess
import sys

import support

RUNNER = os.path.join(support.LIB, "runner.py")
TEST = "import sys, runner\nsys.exit(runner.main([\"test\"]))"

# each step does what its name says (@TMP@ the case's scratch directory)
FAKE = """#!/usr/bin/env bash
. "@REPO@/tools/lib/blkctx.sh"
case ${SC_FAKE:-}:$1 in
setupfails:*) die "setup failed" ;;
lock:*) [ "$(readlink "/proc/$$/fd/${BLKCTX_LOCK_FD:-none}")" = "$CACHE/.lock" ] &&
	flock -n "${BLKCTX_LOCK_FD:-none}" || die "$1 does not hold test's lock"
	report_counts "$1" 1 0 0 ;;
pass:*) report_counts "$1" 1 0 0 ;;
# the child in a pipeline of its own group, as a step's guest runs
hang:setup) set -m; sh "@TMP@/test-interrupt/child" | cat ;;
*:setup | *:selfcheck | *:prepare | *:mail-check | *:demo | *:warnings) exit 0 ;;
*:checkpatch) exit 1 ;;
*:kunit) report_counts kunit-x86_64 5 0 1; die "the arm kernel does not build" ;;
silent:selftests) exit 0 ;;
silent:bench-check) report_counts bench-check 2 0 0; exit 1 ;;
*:selftests) report_counts selftests 3 1 0; exit 1 ;;
*:bench-check) report_counts bench-check 2 0 0 ;;
*:pahole) false; echo "not reached" ;;
esac
"""


def fake_steps(tmp):
    """TMP/fake, a fake tools/blkctx for test's steps."""
    path = os.path.join(tmp, "fake")
    with open(path, "w") as f:
        f.write(FAKE.replace("@REPO@", support.REPO).replace("@TMP@", tmp))
    os.chmod(path, 0o755)
    return path


def py_test(tmp, env=None, unset=()):
    """The test command of runner.py, its cache the scratch TMP/cache (its
    lock, build/test-results.json), its steps through TMP/fake."""
    environ = {"BLKCTX_CACHE": os.path.join(tmp, "cache"),
               "BLKCTX_SELF": os.path.join(tmp, "fake"), "TMPDIR": tmp}
    environ.update(env or {})
    return support.python(TEST, env=environ, unset=unset)


def total(text):
    return "\n".join(line for line in text.splitlines() if line.startswith("total:"))


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return repr(e)


class TestSteps(support.Case):
    """test's steps counted, dying ones too; its JSON; its lock passed on;
    prepare --force in CI."""

    def setUp(self):
        super().setUp()
        self.results = self.path("cache", "build", "test-results.json")
        fake_steps(self.tmp)

    def test_counted(self):
        """test: every step counted, and the JSON with them"""
        done = py_test(self.tmp)
        # selfcheck, mail-check, kunit 5 + 1 skipped, selftests 3, bench-check 2,
        # demo, warnings; checkpatch, kunit's die, selftests' failure, pahole's set -e exit
        self.same("test: every step counted, dying ones too",
                  "1 total: 14 passed, 4 failed, 1 skipped",
                  "%d %s" % (done.status, total(done.out)))
        # the JSON: the same totals, which are its steps' sums, and each step
        # with what it reported
        d = read_json(self.results)
        try:
            steps = d["steps"]
            kunit = [s for s in steps if s["step"] == "kunit"][0]
            got = "%d %d %d = %d %d %d; %d steps; kunit: %d [%s]" % (
                d["passed"], d["failed"], d["skipped"],
                sum(s["passed"] for s in steps), sum(s["failed"] for s in steps),
                sum(s["skipped"] for s in steps), len(steps), kunit["status"],
                ", ".join("%s %d %d %d" % (r["name"], r["passed"], r["failed"], r["skipped"])
                          for r in kunit["reports"]))
        except (TypeError, KeyError, IndexError) as e:
            got = "%r in %r" % (e, d)
        self.same("test: the JSON results match the closing line, step by step",
                  "14 4 1 = 14 4 1; 11 steps; kunit: 1 [kunit-x86_64 5 0 1, die 0 1 0]", got)

    def test_silent(self):
        """test: a step that reports nothing, or fails with nothing failed"""
        done = py_test(self.tmp, env={"SC_FAKE": "silent"})
        self.same("test: a step that reports no result fails, as does one that fails with "
                  "none failed", "1 total: 11 passed, 5 failed, 1 skipped",
                  "%d %s" % (done.status, total(done.out)))

    def test_setup_fails(self):
        """test: a failed setup, its total and its JSON"""
        # an earlier run's JSON must not stand for this one
        self.write("cache/build/test-results.json",
                   '{"passed": 9, "failed": 0, "skipped": 0, "steps": []}\n')
        done = py_test(self.tmp, env={"SC_FAKE": "setupfails"})
        self.same("test: a failed setup still ends with the total",
                  "1 total: 0 passed, 1 failed, 0 skipped",
                  "%d %s" % (done.status, total(done.out)))
        d = read_json(self.results)
        try:
            got = "%d %d %d %s" % (d["passed"], d["failed"], d["skipped"],
                                   " ".join(s["step"] for s in d["steps"]))
        except (TypeError, KeyError) as e:
            got = "%r in %r" % (e, d)
        self.same("test: a failed setup still writes the JSON", "0 1 0 setup", got)

    def test_lock(self):
        """test: its steps hold its lock"""
        # each step holds the cache's lock that test took (else it would wait
        # for it for ever): the runner passes the descriptor on
        done = py_test(self.tmp, env={"SC_FAKE": "lock"}, unset=("BLKCTX_LOCK_FD",))
        self.same("test: every step holds test's lock",
                  "0 total: 9 passed, 0 failed, 0 skipped",
                  "%d %s" % (done.status, total(done.out)))

    def test_ci(self):
        """test: prepare --force in CI only"""
        # CI tests the patch files: prepare --force there, plain prepare elsewhere
        steps = self.path("steps")
        self.write("fake-args", '#!/bin/sh\necho "$*" >>"%s"\n' % steps, 0o755)
        got = []
        for ci in ("true", ""):
            if os.path.exists(steps):
                os.unlink(steps)
            py_test(self.tmp, env={"CI": ci, "BLKCTX_SELF": self.path("fake-args")})
            try:
                with open(steps) as f:
                    got += f.read().splitlines()[1:2]
            except OSError:
                pass
        self.same("test: prepare --force in CI only", "prepare --force\nprepare", "\n".join(got))


class TestInterrupt(support.Case):
    """SIGTERM or SIGINT to test, or to its step runner alone (as a CI job's
    timeout would), ends the running step and what it started, at once, and
    the runner leaves no temporary file."""

    def left(self, tmp, out):
        names = sorted(os.listdir(tmp))
        return out + ", left " + "\n".join(names) if names else out

    def test_interrupt(self):
        """A signal to test or its step runner ends the running step at once; what
        cannot be run or written fails the run, with the closing line"""
        t = self.path("test-interrupt")
        support.signal_child(t)
        tmp = os.path.join(t, "tmp")
        os.makedirs(tmp)
        fake = fake_steps(self.tmp)
        q = shlex.quote
        for sig in (signal.SIGTERM, signal.SIGINT):
            run = support.signal_run(
                t, sig, "BLKCTX_CACHE=%s SC_FAKE=hang TMPDIR=%s BLKCTX_SELF=%s PYTHONPATH=%s "
                "exec %s -B -c %s" % (q(self.path("cache")), q(tmp), q(fake), q(support.LIB),
                                      q(sys.executable), q(TEST)))
            self.same("interrupt: %s ends test and its running step at once" % sig.name,
                      "status %d in 0 s" % (128 + sig),
                      self.left(tmp, run.outcome("step")))
            run = support.signal_run(
                t, sig, "TMPDIR=%s SC_FAKE=hang exec %s -B %s --blkctx %s --json %s"
                % (q(tmp), q(sys.executable), q(RUNNER), q(fake), q(os.path.join(t, "r.json"))))
            self.same("interrupt: %s to the step runner ends its running step at once"
                      % sig.name, "status %d in 0 s" % (128 + sig),
                      self.left(tmp, run.outcome("step")))
        # a closing line that cannot be written fails the run and leaves no
        # results file behind
        environ = dict(os.environ, BLKCTX_CACHE=self.path("cache"), SC_FAKE="pass", TMPDIR=tmp,
                       BLKCTX_SELF=fake, PYTHONPATH=support.LIB)
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-B", "-c", TEST], env=environ,
                                  stdin=subprocess.DEVNULL, stdout=full,
                                  stderr=subprocess.DEVNULL, timeout=600)
        self.same("test: a closing line that cannot be written fails, leaving nothing behind",
                  "status 1, left: ",
                  "status %d, left: %s" % (done.returncode, "\n".join(sorted(os.listdir(tmp)))))

        # what cannot be run or written fails the run, with the closing line
        def closing(done):
            lines = (done.out + "status %d\n" % done.status).splitlines()
            return " ".join(line for line in lines if line.startswith(("total", "status")))

        done = support.run([sys.executable, "-B", RUNNER, "--blkctx", os.path.join(t, "none"),
                            "--json", os.path.join(t, "r.json")])
        self.same("test: a step that cannot be run fails, with the closing line",
                  "total: 0 passed, 1 failed, 0 skipped status 1", closing(done))
        done = support.run([sys.executable, "-B", RUNNER, "--blkctx", fake,
                            "--json", os.path.join(fake, "r.json")], env={"SC_FAKE": "pass"})
        self.same("test: JSON that cannot be written fails the run, with the closing line",
                  "total: 9 passed, 0 failed, 0 skipped status 1", closing(done))
