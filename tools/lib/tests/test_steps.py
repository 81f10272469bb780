# SPDX-License-Identifier: GPL-2.0
"""The commands written in Python, driven with stand-ins: kunit's start and totals, the record of the tree a kernel
was built from, the patch list and its digest, and a child's output
copied to a log."""

import contextlib
import hashlib
import io
import os
import subprocess
from unittest import mock

import support

import common
import kunit_step


def stdout_of(function, *args):
    """What FUNCTION(*ARGS) prints, as a bash $(...) has it (the newlines
    at its end dropped)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        function(*args)
    return out.getvalue().rstrip("\n")


def text_of(path):
    """PATH's text as $(cat PATH 2>&1) has it."""
    try:
        with open(path) as f:
            return f.read().rstrip("\n")
    except OSError as e:
        return "cat: %s: %s" % (path, e.strerror)


# a stand-in kunit.py: exits with $SC_STATUS, and writes a test.log that
# shows a kernel booted when $SC_TAP is set
FAKE_KUNIT = """import os, sys
build = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--build_dir=")][0]
if os.environ.get("SC_TAP"):
    open(build + "/test.log", "w").write("TAP version 14\\n")
sys.exit(int(os.environ["SC_STATUS"]))
"""

RECORD = """import sys, common, kunit_step
st = kunit_step.kunit_py("x86_64", sys.argv[1], out=open("/dev/null", "w"))
try:
    rec = open(kunit_step.build_dir("x86_64") + "/.blkctx-tree").read().strip()
except OSError:
    rec = "none"
print(sys.argv[1], st, "current" if rec == common.tree_state() else rec)
"""

BUILD_FAILS = """import common, kunit_step
def boot():
    kunit_step.build("x86_64", "demo")
    print("went on")
print("status", common.run_command("demo", boot))
"""

TEE = """import sys, procs
with open(sys.argv[1], "w") as log:
    for cmd in ("echo one; echo two >&2; exit 3", "sleep 30 & echo $! >%s; echo left"
                % sys.argv[2]):
        print("status", procs.run(["sh", "-c", cmd], "x", 60, tee=log), flush=True)
print(open(sys.argv[1]).read().split())
"""


class TestPySteps(support.Case):
    """The Python steps' common behaviour."""

    def fake_tree(self):
        """A cache whose linux/ is a git tree with the stand-in kunit.py."""
        linux = self.path("cache", "linux")
        self.write("cache/linux/tools/testing/kunit/kunit.py", FAKE_KUNIT)
        for args in (["init", "-q"], ["add", "-A"],
                     ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "t"]):
            subprocess.run(["git", "-C", linux] + args, check=True, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL)
        return self.path("cache")

    def test_no_tree(self):
        """kunit without a tree: it fails, says why and reports a die."""
        os.makedirs(self.path("cache"))
        results = self.path("results")
        # a process: common.CACHE is read at import, and main locks the cache
        done = support.python('import sys, kunit_step; print("status", kunit_step.main(["kunit"]))',
                              env={"BLKCTX_CACHE": self.path("cache"),
                                   "BLKCTX_RESULTS": results})
        self.same("kunit: without a tree it fails, saying why, and reports it",
                  "blkctx: error: no tree: run tools/blkctx prepare\nstatus 1\ndie 0 1 0",
                  done.out.rstrip("\n") + "\n" + text_of(results))

    def test_total(self):
        """kunit's total over the architectures, and its status."""
        def runs(results):
            def run_arch(arch, kunit):
                return results[arch]
            return run_arch

        def totals():
            lines = []
            for results in ({"x86_64": (2, 0, 1, True), "arm": (2, 0, 0, True)},
                            {"x86_64": (2, 0, 0, True), "arm": (1, 1, 0, False)}):
                with mock.patch.object(common, "tree_current", lambda: None), \
                        mock.patch.object(kunit_step, "run_arch", runs(results)):
                    status = []
                    lines.append(stdout_of(lambda: status.append(kunit_step.command_kunit([]))))
                lines.append("status %d" % status[0])
            return "\n".join(lines)

        self.same("kunit: the total over the architectures, failed when one failed",
                  "kunit: 4 passed, 0 failed, 1 skipped\nstatus 0\n"
                  "kunit: 3 passed, 1 failed, 0 skipped\nstatus 1", support.caught(totals))

    def test_tree_record(self):
        """kunit_py records the tree only after a build that passed or a
        run that booted, and never keeps a record from before."""
        cache = self.fake_tree()
        build = self.path("cache", "build", "kunit-x86_64")
        out = []
        for sub, status, tap in (("build", 0, ""), ("build", 2, ""), ("run", 1, "tap"),
                                 ("run", 1, ""), ("config", 0, "")):
            os.makedirs(build, exist_ok=True)
            self.write("cache/build/kunit-x86_64/.blkctx-tree", "stale\n")
            # a process: common.BUILD and TREE are read at import
            out.append(support.python(RECORD, sub, env={
                "SC_STATUS": str(status), "SC_TAP": tap, "BLKCTX_CACHE": cache}).out)
        self.same("kunit: a kernel records the tree only when built or booted",
                  "build 0 current\nbuild 2 none\nrun 1 current\nrun 1 none\nconfig 0 stale",
                  "".join(out).rstrip("\n"))

    def test_build_fails(self):
        """A guest's kernel that cannot be built (kunit.py fails) stops the
        command that boots it."""
        cache = self.fake_tree()
        results = self.write("built-results", "")
        done = support.python(BUILD_FAILS, env={"SC_STATUS": "2", "BLKCTX_CACHE": cache,
                                                "BLKCTX_RESULTS": results}, split=True)
        self.same("kunit: a guest's kernel that cannot be built stops the command",
                  "status 1, reported die 0 1 0",
                  "%s, reported %s" % (done.out.rstrip("\n"), text_of(results)))

    def test_patch_files(self):
        """The patch list and its digest: series/, kunit/, selftests/ in
        order, no cover letter, every byte (the source's version is the
        tree's record, apart)."""
        repo = self.path("repo")
        for name, text in (("series/0000-cover-letter.patch", "c\n"),
                           ("series/0002-b.patch", "s2\n"), ("series/0001-a.patch", "s1\n"),
                           ("kunit/0003-k.patch", "k\n"), ("selftests/0004-t.patch", "t\n"),
                           ("selftests/notes.txt", "n\n")):
            self.write("repo/" + name, text)

        def files():
            return " ".join(line.replace(repo + "/", "", 1)
                            for line in stdout_of(common.main, ["files", repo]).split("\n"))

        self.same("patch files: in order, without the cover letter",
                  "series/0001-a.patch series/0002-b.patch kunit/0003-k.patch "
                  "selftests/0004-t.patch", support.caught(files))
        self.same("patch files: the digest of their bytes",
                  hashlib.sha256(b"s1\ns2\nk\nt\n").hexdigest()[:16],
                  support.caught(lambda: stdout_of(common.main, ["digest", repo])))

    def test_tee(self):
        """A child's output through procs.run's tee: ours and the log's,
        and a process it leaves behind holding the output is stopped."""
        # a process: procs.run stops what is left with signals to its session
        left = self.path("left.pid")
        self.addCleanup(support.kill, left)
        done = support.python(TEE, self.path("tee.log"), left,
                              env={"BLKCTX_STOP_SECONDS": "1"}, split=True)
        stopped = "x: its output is still open after it ended: stopping what it left"
        self.same("procs: a tee to our output and the log, whatever is left behind",
                  "one\ntwo\nstatus 3\nleft\nstatus 0\n['one', 'two', 'left']; "
                  "what it left: stopped, said",
                  "%s; what it left: %s, %s" % (
                      done.out.rstrip("\n"), "runs" if support.alive(left) else "stopped",
                      "said" if stopped in done.err else "not said"))

