#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""KUnit through the tree's own kunit.py, one build directory per
architecture: the "kunit" command, and the kernels the guests boot.

  kunit [ARCH...]      every suite on each architecture, counted from
                       kunit.py's JSON (kunit_results.py) and judged

build() makes the kernel a guest boots (selftests_step.py, bench_step.py)
and config() the .config kunit.py makes (build_step.py). A kernel built
here records the tree it was built from (tree_state in common.py) in its
build directory; selftests_step.py boots only a kernel whose record
matches the tree as it is now.
"""

import argparse
import os
import shutil
import sys

sys.dont_write_bytecode = True

# after the line above: these import nothing that writes bytecode
import common  # noqa: E402
from common import REPO, Failure  # noqa: E402
import guest  # noqa: E402
import kunit_results  # noqa: E402
import procs  # noqa: E402
from procs import say  # noqa: E402

# The WARN_ON_ONCE() of submit_bio_noacct() for a read that carries a
# stream, which blk_write_stream_limits.submission_checks_the_stream provokes.
EXPECTED_WARN = (r"WARNING: CPU: [0-9]+ PID: [0-9]+ at block/blk-core\.c:[0-9]+ "
                 r"submit_bio_noacct\+")


def build_dir(arch):
    return os.path.join(common.BUILD, "kunit-" + arch)


def kunit_args(arch):
    facts = common.ARCHES[arch]
    args = ["--arch=" + facts.linux, "--kunitconfig=" + os.path.join(REPO, "kunitconfig"),
            "--qemu_config=" + os.path.join(REPO, "qemu_configs", arch + ".py"),
            "--build_dir=" + build_dir(arch)]
    if facts.cross_compile:
        args.append("--cross_compile=" + facts.cross_compile)
    return args


def kunit_py(arch, sub, extra=(), out=None, tee=None):
    """kunit.py SUB for ARCH with EXTRA arguments, its output to the file
    OUT (or ours, and with TEE to TEE too), a progress line a minute; its
    status. A build, or a run that booted, records the tree's state; a
    build that fails leaves no record."""
    directory = build_dir(arch)
    stamp = os.path.join(directory, ".blkctx-tree")
    test_log = os.path.join(directory, "test.log")
    started = os.path.join(directory, ".blkctx-started")
    os.makedirs(directory, exist_ok=True)
    state = None
    jobs = []
    if sub in ("run", "build"):
        jobs = ["--jobs=" + common.JOBS]
        state = common.tree_state()
        for path in (stamp, test_log):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
    with open(started, "w"):
        pass
    # -B: kunit.py imports qemu_configs/ARCH.py, whose bytecode would
    # otherwise land in this repository's working copy
    cmd = [sys.executable, "-B", "tools/testing/kunit/kunit.py", sub] + kunit_args(arch) + \
        jobs + ["--make_options", "CC=ccache %sgcc" % common.ARCHES[arch].cross_compile] + \
        list(extra)

    def detail():
        return procs.objects_since(directory, started)

    status = procs.run(["env", "-C", common.TREE] + cmd, "kunit %s %s" % (sub, arch),
                       procs.progress_seconds(), out=out, tee=tee, detail=detail)
    # run fails when a case fails, after building and booting the kernel
    if state and ((sub == "build" and status == 0) or
                  (sub == "run" and any("TAP version" in line
                                        for line in guest.read_lines(test_log)))):
        with open(stamp, "w") as f:
            f.write(state + "\n")
    return status


def config(arch, dest):
    """The .config kunit.py builds for ARCH, made again when kunitconfig or
    the QEMU config is newer, copied to DEST."""
    made = os.path.join(build_dir(arch), ".config")

    def mtime(path):
        return os.stat(path).st_mtime

    if not os.path.isfile(made) or \
            mtime(os.path.join(REPO, "kunitconfig")) > mtime(made) or \
            mtime(os.path.join(REPO, "qemu_configs", arch + ".py")) > mtime(made):
        log = os.path.join(common.BUILD, "kunit-%s-config.log" % arch)
        with open(log, "w") as out:
            status = kunit_py(arch, "config", out=out)
        if status != 0 or not os.path.isfile(made):
            common.show_log_end(log)
            raise Failure("kunit.py config for %s failed (see %s)" % (arch, log))
    shutil.copyfile(made, dest)


def build(arch, who):
    """Build the KUnit kernel that WHO's guest boots; the log's end on
    failure."""
    log = os.path.join(common.BUILD, "kunit-%s-build.log" % arch)
    say("%s: building the %s kernel" % (who, arch))
    os.makedirs(common.BUILD, exist_ok=True)
    with open(log, "w") as out:
        status = kunit_py(arch, "build", out=out)
    if status != 0:
        common.show_log_end(log)
        raise Failure("%s: the kernel does not build" % who)


def run_arch(arch, kunit=kunit_py):
    """Every suite on ARCH: (passed, failed, skipped, ok). A report of the
    kernel's detectors fails the run, but for the one WARN that
    blk_write_stream_limits provokes on purpose (a read with a stream)."""
    log = os.path.join(common.BUILD, "kunit-%s.log" % arch)
    results = os.path.join(common.BUILD, "kunit-%s.json" % arch)
    test_log = os.path.join(build_dir(arch), "test.log")
    say("kunit: %s (log: %s)" % (arch, log))
    os.makedirs(common.BUILD, exist_ok=True)
    try:
        os.unlink(results)
    except FileNotFoundError:
        pass
    with open(log, "w") as tee:
        status = kunit(arch, "run", ["--json=" + results], tee=tee)
    counts = kunit_results.judge(arch, results, status, test_log, EXPECTED_WARN)
    print("kunit: %s: %d passed, %d failed, %d skipped" % (
        arch, counts.passed, counts.failed, counts.skipped), flush=True)
    common.report("kunit-" + arch, counts.passed, counts.failed, counts.skipped)
    # count() fails a status that no case explains
    return counts.passed, counts.failed, counts.skipped, counts.failed == 0


def command_kunit(arches, kunit=kunit_py):
    """The kunit command: every architecture of ARCHES (all without), a
    line each and a total; 0 when every one passed."""
    common.tree_current()
    totals = [0, 0, 0]
    ok = True
    for arch in arches or list(common.ARCHES):
        passed, failed, skipped, arch_ok = run_arch(arch, kunit)
        totals = [totals[0] + passed, totals[1] + failed, totals[2] + skipped]
        ok = ok and arch_ok
    print("kunit: %d passed, %d failed, %d skipped" % tuple(totals), flush=True)
    return 0 if ok else 1


def main(argv, lock=True):
    parser = argparse.ArgumentParser(prog="kunit_step.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("kunit")
    # not choices: argparse checks an empty list against them
    p.add_argument("arch", nargs="*", type=common.arch_name)
    opts = parser.parse_args(argv)

    def body():
        if lock:
            common.lock("kunit " + " ".join(opts.arch))
        return command_kunit(opts.arch)

    return common.run_command("kunit", body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
