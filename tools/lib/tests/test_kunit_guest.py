# SPDX-License-Identifier: GPL-2.0
"""KUnit's results and the guests' boots: kunit_results.py's count and judgement of kunit.py's JSON
and console, kunit_step.run_arch, selftests_step.judged on the guests'
KTAP (ktap.py), guest.py's reports of the kernel's detectors, and
guest.py boot with a stand-in for QEMU: its log, status, timeout, progress
lines and signals."""

import contextlib
import io
import os
import re
import signal
import sys
import time
from unittest import mock

import support

import guest
import kunit_results
import kunit_step

GUEST_PY = os.path.join(support.LIB, "guest.py")
KUNIT_PARSER = "tools/testing/kunit/kunit_parser.py"
KUNIT_KERNEL = "tools/testing/kunit/kunit_kernel.py"


def captured(text):
    """TEXT as a bash $(...) has it: the newlines at its end dropped."""
    return text.rstrip("\n")


def main_of(module, *args):
    """MODULE.main() run in-process as "MODULE.py ARGS": (its standard
    output, its standard error)."""
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.object(sys, "argv", [module.__file__] + list(args)), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            module.main()
        except SystemExit:
            pass
    return out.getvalue(), err.getvalue()


def kunit_counts(*args):
    """kunit_results.py's count and judgement of ARGS: (stdout, stderr)"""
    return main_of(kunit_results, *args)


JUDGED = """import sys, selftests_step
print(*selftests_step.judged("x86_64", sys.argv[1], int(sys.argv[2]), 900, sys.argv[3]))
"""


def judge(log, status, tree=support.TREE):
    """The counts selftests_step.judged gives the console LOG of a boot that
    QEMU ended with STATUS (TREE's kunit_parser), in a process of its own:
    its output then "status N" for a status other than 0, errors in .err"""
    done = support.python(JUDGED, log, status, tree, split=True)
    done.out = done.text()
    return done


class Kunit(support.Case):
    """The JSON that kunit.py's parser wrote for each
    tools/selfcheck/kunit-*.ktap, with the status kunit.py exited with."""

    def test_counts(self):
        """kunit_results.py's counts of kunit.py's JSON and status."""
        d = support.CANNED
        # name, kunit.py's status, the counts
        for name, status, want in (
                ("pass", 0, "2 0 0"),
                ("skip", 0, "1 0 1"),
                ("fail", 1, "1 1 0"),
                ("crash", 1, "1 3 0"),
                ("timeout", 1, "2 1 0"),
                ("noplan", 0, "2 0 0"),
                ("notests", 1, "0 1 0"),
                ("allskip", 0, "0 1 2")):
            self.same("kunit counts: " + name, want, captured(kunit_counts(
                "x86_64", os.path.join(d, "kunit-%s.json" % name), str(status))[0]))
        self.same("kunit counts: no JSON (the build failed)", "0 1 0",
                  captured(kunit_counts("x86_64", self.path("none.json"), "1")[0]))
        self.write("nostatus.json", '{"name": "KUnit Test Group", "test_cases": '
                   '[{"name": "a", "status": "PASS"},\n\t\t{"name": "b"}]}\n')
        self.same("kunit counts: a case with no status is a failure", "1 1 0",
                  captured(kunit_counts("x86_64", self.path("nostatus.json"), "0")[0]))
        self.write("list.json", "[1]\n")
        self.same("kunit counts: JSON not in the form kunit.py writes", "0 1 0",
                  captured(kunit_counts("x86_64", self.path("list.json"), "0")[0]))
        self.same("kunit counts: every case passed, kunit.py failed", "2 1 0",
                  captured(kunit_counts("x86_64", os.path.join(d, "kunit-pass.json"),
                                        "1")[0]))

    def test_judged(self):
        """kunit_results.py's judgement of kunit.py's test.log.

        The kernel's console: a detector's report is one failure more, but
        for the WARN that is expected."""
        d = support.CANNED

        def said(err):
            """What the judgement said, as "; " and each thing said."""
            text = ""
            for line in err.split("\n"):
                m = re.match(r"blkctx: kunit: x86_64: (.*) \(see .*", line)
                if m:
                    text += "; " + m.group(1)
                m = re.match(r"    \[ *[0-9.]*\] (.*)", line)
                if m:
                    text += "; " + m.group(1)
                if re.match(r"kunit: x86_64: FAILED cannot read ", line):
                    text += "; cannot read it"
            return text

        # test.log, whether the expected WARN is allowed, the counts and
        # what was said ("": the directory, which cannot be read)
        for name, allow, want in (
                ("guest-pass.log", False, "2 0 0"),
                ("kunit-warn.log", True, "2 1 0; the kernel reported errors; WARNING: CPU: 0 "
                 "PID: 170 at fs/ext4/context.c:42 ext4_context_note_write+0x11/0x40"),
                ("guest-lockdep.log", True, "2 1 0; the kernel reported errors; WARNING: "
                 "possible circular locking dependency detected; BUG: sleeping function "
                 "called from invalid context at kernel/time/sleep_timeout.c:269; INFO: task "
                 "emmc_contexts:181 blocked for more than 5 seconds."),
                ("", True, "2 1 0; cannot read it")):
            args = ["x86_64", os.path.join(d, "kunit-pass.json"), "0",
                    "--log", os.path.join(d, name)]
            if allow:
                args += ["--allow", kunit_step.EXPECTED_WARN]
            out, err = kunit_counts(*args)
            self.same("kunit judged: every case passed, test.log " + name, want,
                      captured(out) + said(err))

    def test_step(self):
        """The KUnit step for one architecture (kunit_step.run_arch).

        kunit.py's JSON and console from tools/selfcheck/ in place of a run:
        the expected WARN passes, another fails the run."""
        d = support.CANNED
        with open(os.path.join(d, "kunit-warn.log")) as f:
            self.write("kunit-expected-warn.log", "".join(f.readlines()[:3]))
        # in a process of its own: it sets common.BUILD, and reports to
        # $BLKCTX_RESULTS
        code = """import shutil, sys
import common, kunit_step
common.BUILD, status, json, log = sys.argv[1:]
def kunit(arch, sub, extra, tee):
    if json != "-":
        shutil.copyfile(json, extra[0][len("--json="):])
    shutil.copyfile(log, kunit_step.build_dir(arch) + "/test.log")
    return int(status)
shutil.os.makedirs(kunit_step.build_dir("x86_64"))
*_, ok = kunit_step.run_arch("x86_64", kunit)
with open(common.BUILD + "/results") as f:
    print(", status %d, reported %s" % (0 if ok else 1, f.read().strip()), end="")
"""
        # kunit.py's status, its JSON ("-": none), test.log, the step's last
        # line, its status and what it reported to test
        pass_json = os.path.join(d, "kunit-pass.json")
        pass_log = os.path.join(d, "guest-pass.log")
        for status, json, log, want in (
                (0, pass_json, pass_log, "kunit: x86_64: 2 passed, 0 failed, 0 skipped, "
                 "status 0, reported kunit-x86_64 2 0 0"),
                (0, pass_json, self.path("kunit-expected-warn.log"), "kunit: x86_64: 2 passed, "
                 "0 failed, 0 skipped, status 0, reported kunit-x86_64 2 0 0"),
                (0, pass_json, os.path.join(d, "kunit-warn.log"), "kunit: x86_64: 2 passed, "
                 "1 failed, 0 skipped, status 1, reported kunit-x86_64 2 1 0"),
                (1, pass_json, pass_log, "kunit: x86_64: 2 passed, 1 failed, 0 skipped, "
                 "status 1, reported kunit-x86_64 2 1 0"),
                (0, "-", pass_log, "kunit: x86_64: 0 passed, 1 failed, 0 skipped, "
                 "status 1, reported kunit-x86_64 0 1 0")):
            step = self.path("kunit-step-%d-%s-%s" % (status, os.path.basename(json),
                                                      os.path.basename(log)))
            os.makedirs(step)
            results = os.path.join(step, "results")
            open(results, "w").close()
            done = support.python(code, step, status, json, log,
                                  env={"BLKCTX_RESULTS": results}, split=True)
            self.same("kunit step: kunit.py status %d, JSON %s, test.log %s"
                      % (status, os.path.basename(json), os.path.basename(log)),
                      want, done.out.replace("\n", ""))


class Guest(support.Case):
    """The guests' KTAP, and the judgement of a boot (a guest
    that stops before the sentinel is one failure more)."""

    def setUp(self):
        super().setUp()
        self.need_tree(KUNIT_PARSER)

    def test_counts(self):
        """selftests_step.judged's counts of each canned guest console."""
        d = support.CANNED
        # name, QEMU's status, the counts
        for name, status, want in (
                ("pass", 0, "3 0 0"),
                ("fail", 0, "2 2 1"),
                ("skip", 0, "1 0 2"),
                ("timeout", 0, "1 1 0"),
                ("stopped", 1, "2 1 0"),
                ("stopped", 124, "2 1 0"),
                ("pass", 124, "3 1 0"),
                ("kasan", 0, "3 1 0"),
                ("lockdep", 0, "3 1 0"),
                ("shortplan", 0, "2 1 0"),
                ("prefixed", 0, "4 1 2"),
                ("strayplan", 0, "1 1 0"),
                ("subtest", 0, "2 1 0"),
                ("cut", 124, "1 2 0"),
                ("oddlines", 0, "2 4 0"),
                # a block two levels below its test: moved up a level, and counted
                ("skiplevel", 0, "3 2 0"),
                ("kunitfirst", 0, "1 0 0"),
                ("notests", 0, "0 1 0"),
                ("crjoin", 0, "3 1 0")):
            self.same("guest counts: %s (qemu status %d)" % (name, status), want,
                      captured(judge(os.path.join(d, "guest-%s.log" % name), status).out))
        self.same("guest counts: an empty log", "0 1 0", captured(judge("/dev/null", 0).out))

    def test_judge_fails(self):
        """A judge that cannot count or crashes, and a boot that failed early.

        Each is a failure; the early one is not judged by an earlier boot's
        log."""
        d = support.CANNED
        pass_log = os.path.join(d, "guest-pass.log")
        # the judge itself fails (here: no kunit_parser to count with)
        done = judge(pass_log, 0, self.path("none"))
        self.same("guest counts: a parser that cannot run is a failure, named",
                  "0 1 0\nselftests: x86_64: FAILED tools/lib/ktap.py failed (status 1) on "
                  + pass_log,
                  captured(done.out + "".join(line + "\n" for line in done.err.split("\n")
                                              if "FAILED" in line)))
        # a boot that fails before QEMU starts leaves no earlier log to judge
        with open(pass_log) as f:
            self.write("old.log", f.read())
        done = support.python("""import sys, guest, selftests_step
status = guest.boot_guest("x86_64", sys.argv[2], sys.argv[2] + "/none.py", "k", "i", "",
                          sys.argv[1], 30, 60)
print(selftests_step.judged("x86_64", sys.argv[1], status, 30, sys.argv[2]).passed, "passes")
""", self.path("old.log"), support.TREE, split=True)
        self.same("guest counts: a boot that failed early is not judged by the last log",
                  "0 passes",
                  captured(done.text()))
        # guest.py itself fails (a directory is no log)
        self.same("guest counts: a judge that crashes is a failure", "0 1 0",
                  captured(judge(d, 0).out))

    def test_judged(self):
        """What the judge says of a boot that failed."""
        d = support.CANNED
        # name, QEMU's status, a line it says
        for name, status, want in (
                ("stopped", 1, "selftests: x86_64: the guest stopped before the end of the "
                 "tests (a crash? qemu status 1)"),
                ("stopped", 1, "selftests: x86_64: the last test to start was"),
                ("stopped", 124, "selftests: x86_64: the guest did not finish in 900s "
                 "(a hang?): killed it"),
                ("stopped", 137, "selftests: x86_64: the guest did not finish in 900s "
                 "(a hang?): killed it"),
                ("pass", 124, "selftests: x86_64: the guest ran every test but did not stop "
                 "by itself (qemu status 124)"),
                ("notests", 0, "selftests: x86_64: ran no test"),
                ("kasan", 0, "selftests: x86_64: the kernel reported errors"),
                ("fail", 0, "selftests: x86_64: FAILED")):
            err = judge(os.path.join(d, "guest-%s.log" % name), status).err
            got = "\n".join(re.sub(r"^blkctx: ", "", line) for line in err.split("\n"))
            self.has("guest judged: %s (qemu status %d): %s"
                     % (name, status, want[len("selftests: x86_64: "):]), want, got)

    def test_reports(self):
        """guest.py reports: the kernel's detectors' reports in a log."""
        d = support.CANNED
        self.same("kernel reports: after a lone carriage return, after a program's text",
                  "[    3.1] BUG: KASAN: use-after-free in ext4_foo+0x1/0x2\n"
                  "# writing inode tables: [    3.2] WARNING: CPU: 0 PID: 1 at "
                  "fs/ext4/foo.c:1 ext4_bar+0x1/0x2",
                  captured(main_of(guest, "reports", os.path.join(d, "guest-crjoin.log"))[0]))
        out = main_of(guest, "reports", os.path.join(d, "guest-lockdep.log"))[0] + \
            main_of(guest, "reports", os.path.join(d, "kunit-warn.log"),
                    "--allow", kunit_step.EXPECTED_WARN)[0]
        self.same("kernel reports: every detector's, not the expected KUnit WARN",
                  "WARNING: possible circular locking dependency detected\n"
                  "BUG: sleeping function called from invalid context at "
                  "kernel/time/sleep_timeout.c:269\n"
                  "INFO: task emmc_contexts:181 blocked for more than 5 seconds.\n"
                  "WARNING: CPU: 0 PID: 170 at fs/ext4/context.c:42 "
                  "ext4_context_note_write+0x11/0x40",
                  captured(re.sub(r"(?m)^\[ *[0-9.]*\] ", "", out)))


class GuestBoot(support.Case):
    """A guest's boot (guest.py boot) with a stand-in for
    QEMU: the machine of qemu_configs/, the console in the log, QEMU's
    status, the timeout, the progress lines, and an interrupt that stops
    QEMU at once."""

    def setUp(self):
        super().setUp()
        self.need_tree(KUNIT_KERNEL)

    def boot(self, *args):
        """guest.py boot's command line, the stand-in QEMU self.tmp/qemu."""
        return [sys.executable, "-B", GUEST_PY, "boot", "--arch", "x86_64",
                "--tree", support.TREE,
                "--config", os.path.join(support.REPO, "qemu_configs", "x86_64.py"),
                "--kernel", "k", "--initrd", "i", "--append", "x=1",
                "--log", self.path("log"), "--qemu", self.path("qemu")] + list(args)

    def qemu(self, script):
        self.write("qemu", script, 0o755)

    def test_plain(self):
        """Plain emulation, whatever KUnit was asked for."""
        self.qemu('#!/bin/sh\necho "console line"\nexit 3\n')
        done = support.run(self.boot("--timeout", "30"), env={"BLKCTX_KVM": "1"}, split=True)
        with open(self.path("log")) as f:
            log = f.read()
        self.same("guest boot: plain emulation, the console in the log, QEMU's status",
                  "status 3\n# %s -nodefaults -m 1024 -kernel k -initrd i -append "
                  "console=ttyS0 x=1 -no-reboot -nographic -serial stdio -bios qboot.rom "
                  "-accel tcg\nconsole line" % self.path("qemu"),
                  captured("status %d\n%s" % (done.status, log)))

    def test_timeout(self):
        """Stopped at its timeout, status 124, QEMU gone."""
        self.qemu('#!/bin/sh\necho $$ >"%s"\nexec sleep 60\n' % self.path("pid"))
        self.addCleanup(support.kill, self.path("pid"))
        start = time.monotonic()
        # a hang fails the case, not the selfcheck
        done = support.run(self.boot("--timeout", "2"), split=True, timeout=60)
        # the timeout, the stand-in's quick end, a loaded machine: not its
        # 60 s sleep
        out = "status %d %s" % (done.status, support.in_time(start, 15))
        if not os.path.exists(self.path("pid")) or not os.path.getsize(self.path("pid")):
            out += ", QEMU never started"
        elif support.alive(self.path("pid")):
            out += ", QEMU still runs"
        self.same("guest boot: stopped at its timeout, status 124, QEMU gone",
                  "status 124 in time", out)

    def test_progress(self):
        """A progress line a second, with how many tests are done."""
        self.qemu('#!/bin/sh\nprintf "1..2\\nok 1 a\\n"\nsleep 2.5\n')
        done = support.run(self.boot("--timeout", "30", "--every", "1"), split=True)
        lines = done.err.splitlines()
        with self.subTest("guest boot: a progress line a second with the tests so far"):
            if done.status != 0 or not 1 <= len(lines) <= 3 or not all(
                    re.fullmatch(r"blkctx: guest x86_64: running for 0 min [0-9] s; "
                                 r"1 of 2 tests done", line) for line in lines):
                self.fail("status %d, then:\n%s" % (done.status, done.err))

    def test_stubborn(self):
        """A QEMU that ignores TERM is killed.

        Even when a signal comes while the stop waits for it."""
        t = self.path("stubborn")
        os.makedirs(t)
        # it says it started when it gets the timeout's TERM
        self.qemu('#!/bin/sh\necho $$ >"%s/grandchild"\ntrap \': >%s/started\' TERM\n'
                  'trap "" INT\nwhile :; do sleep 0.2; done\n' % (t, t))
        self.addCleanup(support.kill, os.path.join(t, "grandchild"))
        start = time.monotonic()
        done = support.run(self.boot("--timeout", "1"), env={"BLKCTX_STOP_SECONDS": "1"},
                           split=True, timeout=60)
        # the timeout, then the stop's wait, then KILL: not its endless loop
        out = "status %d %s" % (done.status, support.in_time(start, 15))
        if support.alive(os.path.join(t, "grandchild")):
            out += ", QEMU still runs"
        if "did not stop; killed it" in done.err:
            out += ", killed"
        self.same("guest boot: a QEMU that ignores TERM is killed", "status 124 in time, killed",
                  out)
        ran = support.signal_run(t, signal.SIGINT, self.boot("--timeout", "1"),
                         env={"BLKCTX_STOP_SECONDS": "1"})
        self.same("guest boot: SIGINT while the timeout's stop waits: QEMU killed all the same",
                  "status 130 in 0 s", ran.outcome("QEMU"))

    def test_slow_config(self):
        """An interrupt while the QEMU parameters load is an interrupt.

        Not an error of the parameters."""
        t = self.path("slow")
        config = self.write("slow/config.py", 'import os, time\n'
                            'open("%s/grandchild", "w").write(str(os.getpid()))\n'
                            'open("%s/started", "w").close()\n'
                            'time.sleep(30)\n' % (t, t))
        ran = support.signal_run(t, signal.SIGINT, self.boot("--timeout", "60", "--config", config))
        self.same("guest boot: SIGINT while the QEMU parameters load", "status 130 in 0 s",
                  ran.outcome("boot"))

    def test_signals(self):
        """QEMU in a session of its own: only guest.py can stop it, at once."""
        support.signal_child(self.tmp)
        self.qemu("#!/bin/sh\nexec sh %s/child\n" % self.tmp)
        for signum in (signal.SIGTERM, signal.SIGINT):
            ran = support.signal_run(self.tmp, signum, self.boot("--timeout", "60"))
            self.same("guest boot: %s stops QEMU and the boot at once" % signum.name,
                      "status %d in 0 s" % (128 + signum), ran.outcome("QEMU"))
