#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Boot a kselftest guest under QEMU and judge what its console shows.

  boot     boot the machine of qemu_configs/ARCH.py with a kernel and an
           initramfs, the console in a log, with a timeout and a progress
           line a minute; exits with QEMU's status, 124 on the timeout
  judge    count a console log's KTAP (ktap.py) and judge the boot: prints
           "passed failed skipped", says why on standard error
  reports  the reports of the kernel's error detectors in a log
  so-far   how far a console's tests are

tools/lib/selftests_step.py builds the initramfs and calls these; a guest's
/init prints the sentinel line last (SENTINEL there), so a log without it is
a guest that crashed or hung.
"""

import argparse
import os
import re
import subprocess
import sys

import procs
from procs import SIGNALS, TIMEOUT_STATUS, Interrupted, say
import qemu_params

sys.dont_write_bytecode = True

# kunit_parser can loop on a plan it cannot meet
KTAP_SECONDS = 120
HERE = os.path.dirname(os.path.abspath(__file__))

# the first line of a report of KASAN, lockdep, sleeping in atomic context,
# hung tasks, RCU stalls, WARN, BUG, an oops, at the start of a line or,
# timestamped, after a program's text on it; a panic alone is the guest
# stopping early, which judge counts
REPORT = re.compile(r"(^|\[ *[0-9.]+\] )((BUG|WARNING|INFO): |Oops|watchdog: BUG)")
RESULT = re.compile(r"^(not )?ok [0-9]+ ")
CASE = re.compile(r"^    (not )?ok [0-9]+ ")
PLAN = re.compile(r"^1\.\.[0-9]+$")
STARTED = re.compile(r"^# selftests: (.*): (.*)$")


def read_lines(path):
    """The lines of a log as ktap.py and kunit.py read them: a serial
    console's "\\r\\n" is one line end, and a lone "\\r" ends a line too (text
    that a program rewrote in place must not hide a report after it)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [line.rstrip("\n") for line in f]
    except FileNotFoundError:
        return []


def kernel_reports(lines, allowed=None):
    """The first line of each report of the kernel's error detectors, minus
    those that the regular expression ALLOWED finds."""
    return [line for line in lines
            if REPORT.search(line) and not (allowed and re.search(allowed, line))]


def so_far(lines):
    """How many tests of the plan are done, and which one runs."""
    plan, done, cases, now = None, 0, 0, None
    for line in lines:
        if PLAN.match(line):
            plan = line[3:]
        if RESULT.match(line):
            done += 1
        if CASE.match(line):
            cases += 1
        if line.startswith("# selftests: "):
            now, cases = line[len("# selftests: "):], 0
    text = "%d of %s tests done" % (done, plan or "?")
    if now is not None:
        text += ", last started: %s (%d of its cases done)" % (now, cases)
    return text


def qemu_command(tree, config, kernel, initrd, append, binary=None):
    """The machine KUnit boots for CONFIG, as kunit.py starts it, with the
    initramfs and the console on the serial port."""
    params = qemu_params.load(tree, config)
    return [binary or params.binary, "-nodefaults", "-m", "1024", "-kernel", kernel,
            "-initrd", initrd, "-append", params.console + " " + append,
            "-no-reboot", "-nographic", "-serial", params.serial] + params.extra


def boot(cmd, log, timeout, what, every=60):
    """Run CMD with its output in LOG for at most TIMEOUT seconds; its status,
    TIMEOUT_STATUS when it was stopped then, 127 when it could not start."""
    os.makedirs(os.path.dirname(log) or ".", exist_ok=True)
    with open(log, "w") as out:
        out.write("# " + " ".join(cmd) + "\n")
        out.flush()
        return procs.run(cmd, what, every, out=out, timeout=timeout,
                         detail=lambda: so_far(read_lines(log)))


def ktap_counts(tree, log, finished):
    """(passed, failed, skipped, failures) of LOG's KTAP, from ktap.py; a
    parser that fails is one failure, never a pass."""
    cmd = [sys.executable, "-B", os.path.join(HERE, "ktap.py"), tree, log,
           "1" if finished else "0"]
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, universal_newlines=True,
                              timeout=KTAP_SECONDS, check=False)
        status = done.returncode
        lines = done.stdout.splitlines()
        counts = [int(n) for n in lines[0].split()] if status == 0 and lines else []
    except subprocess.TimeoutExpired:
        status, counts = TIMEOUT_STATUS, []
    except ValueError:
        counts = []
    if len(counts) != 3:
        why = "failed (status %d)" % status if status else "printed no counts"
        return 0, 1, 0, ["tools/lib/ktap.py %s on %s" % (why, log)]
    return counts[0], counts[1], counts[2], [line[5:] for line in lines[1:] if line.startswith("FAIL ")]


def judge(arch, log, status, tree, timeout, sentinel):
    """The counts of a boot that QEMU ended with STATUS: a guest that stopped
    before the sentinel, or did not stop by itself, or ran no test, or whose
    console has a report of the kernel's detectors, is one failure more."""
    lines = read_lines(log)
    finished = sentinel in lines
    passed, failed, skipped, failures = ktap_counts(tree, log, finished)
    for name in failures:
        print("selftests: %s: FAILED %s" % (arch, name), file=sys.stderr)
    where = "selftests: %s: " % arch
    if not finished:
        started = [m for m in map(STARTED.match, lines) if m]
        if started:
            say(where + "the last test to start was %s:%s" % started[-1].groups())
        panic = next((line for line in lines if "Kernel panic" in line), None)
        if panic:
            say(where + panic.split("] ", 1)[-1])
        if status in (TIMEOUT_STATUS, 137):
            say(where + "the guest did not finish in %ds (a hang?): killed it" % timeout)
        else:
            say(where + "the guest stopped before the end of the tests "
                "(a crash? qemu status %d)" % status)
        for line in lines[-15:]:
            print("    " + line, file=sys.stderr)
        failed += 1
    elif status:
        say(where + "the guest ran every test but did not stop by itself "
            "(qemu status %d)" % status)
        failed += 1
    elif passed + failed + skipped == 0:
        say(where + "ran no test")
        failed += 1
    # whatever the tests said, a report of the kernel's detectors fails it
    failed += say_reports(where, log, kernel_reports(lines))
    return passed, failed, skipped


def say_reports(where, log, reports):
    """Say REPORTS of the kernel's detectors in LOG, if any; they are one
    failure (returned)."""
    if not reports:
        return 0
    say(where + "the kernel reported errors (see %s):" % log)
    for line in reports:
        print("    " + line, file=sys.stderr)
    return 1


def boot_guest(arch, tree, config, kernel, initrd, append, log, timeout, every, qemu=None):
    """Boot the machine of CONFIG (qemu_configs/ARCH.py) with KERNEL and
    INITRD, the console in LOG: boot()'s status, 1 when it could not start.
    A boot that fails from here on leaves no earlier boot's log to judge."""
    try:
        os.makedirs(os.path.dirname(log) or ".", exist_ok=True)
        with open(log, "w"):
            pass
    except OSError as e:
        say("guest %s: cannot write %s: %s" % (arch, log, e))
        return 1
    # plain emulation always, whatever KUnit was asked for (nested, KVM
    # hangs silently): qemu_configs/x86_64.py reads it
    os.environ.pop("BLKCTX_KVM", None)
    try:
        cmd = qemu_command(tree, config, kernel, initrd, append, qemu)
    except Exception as e:  # pylint: disable=broad-except
        say("guest %s: no QEMU parameters from %s: %s" % (arch, config, e))
        return 1
    return boot(cmd, log, timeout, "guest " + arch, every)


def seconds(text):
    """A whole number of seconds, more than 0."""
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError("whole seconds, more than 0: %r" % text)
    return int(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("boot", help="boot a guest, its console in a log")
    p.add_argument("--arch", required=True)
    p.add_argument("--tree", required=True, help="the kernel tree, for kunit_kernel")
    p.add_argument("--config", required=True, help="qemu_configs/ARCH.py")
    p.add_argument("--kernel", required=True)
    p.add_argument("--initrd", required=True)
    p.add_argument("--append", default="", help="kernel parameters after the console's")
    p.add_argument("--log", required=True)
    p.add_argument("--timeout", type=seconds, required=True, help="seconds")
    p.add_argument("--every", type=seconds,
                   default=os.environ.get("BLKCTX_PROGRESS_SECONDS") or "60",
                   help="seconds between progress lines [$BLKCTX_PROGRESS_SECONDS or 60]")
    p.add_argument("--qemu", help="the QEMU binary, instead of the config's")
    p = sub.add_parser("judge", help="count a console log and judge the boot")
    p.add_argument("--arch", required=True)
    p.add_argument("--tree", required=True, help="the kernel tree, for kunit_parser")
    p.add_argument("--timeout", type=seconds, required=True, help="the boot's, for the message")
    p.add_argument("--sentinel", required=True, help="the line /init prints last")
    p.add_argument("log")
    p.add_argument("status", type=int, help="the boot's exit status")
    p = sub.add_parser("reports", help="the kernel's error reports in a log")
    p.add_argument("log")
    p.add_argument("--allow", help="a regular expression of reports that are expected")
    p = sub.add_parser("so-far", help="how far a console's tests are")
    p.add_argument("log")
    opts = parser.parse_args()

    if opts.command == "boot":
        try:
            SIGNALS.install()
            return boot_guest(opts.arch, opts.tree, opts.config, opts.kernel, opts.initrd,
                              opts.append, opts.log, opts.timeout, opts.every, opts.qemu)
        except Interrupted as e:
            return 128 + e.signum
        finally:
            SIGNALS.ignoring = True
    if opts.command == "judge":
        print("%d %d %d" % judge(opts.arch, opts.log, opts.status, opts.tree, opts.timeout,
                                    opts.sentinel))
    elif opts.command == "reports":
        for line in kernel_reports(read_lines(opts.log), opts.allow):
            print(line)
    else:
        print(so_far(read_lines(opts.log)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
