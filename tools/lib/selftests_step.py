#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Kselftests in QEMU guests: the selftests and demo commands, and the
guests of the benchmark (bench_step.py).

  selftests [ARCH...]   every guest of GUESTS on each architecture
  demo                  the README's main job: which context each file's
                        writes landed in
  guest ARCH ...        one guest with the targets, kernel command line and
                        timeout given (without the cache's lock: for a
                        caller that holds it)

A guest's root comes from Debian's packages (guest_root.py), the selftests
are built statically by kselftest's make, a POSIX sh /init
(tools/guest/init) runs them as KTAP and stops the guest, and guest.py
boots it under plain emulation and judges its console. Everything lives in
$BLKCTX_CACHE/guest/ARCH: debs/, resolved, root/ (the root), ksft/ (the
UAPI headers and the kselftest objects, make O=), src/ (the tree seen
through symlinks, out-of-tree targets copied in) and initramfs.cpio.gz.
The console of a boot is build/selftests-ARCH[-GUEST].log.
"""

import argparse
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import List, NamedTuple, Optional

sys.dont_write_bytecode = True

# after the line above: these import nothing that writes bytecode
import common  # noqa: E402
from common import REPO, Failure  # noqa: E402
import guest  # noqa: E402
import guest_root  # noqa: E402
import kunit_step  # noqa: E402
import procs  # noqa: E402
from procs import say  # noqa: E402
import qemu_params  # noqa: E402
import tree_step  # noqa: E402

GUEST_DIR = os.path.join(common.CACHE, "guest")
# /init prints this line last; without it the guest crashed or hung
SENTINEL = "blkctx-guest: selftests finished"
# what every guest needs in its kernel, on top of what boots KUnit (and of
# each architecture's own, in tools/lib/arches)
GUEST_KCONFIG = ["BLK_DEV_INITRD", "RD_GZIP", "DEVTMPFS", "TMPFS", "PROC_FS", "SYSFS",
                 "DEBUG_FS", "BINFMT_ELF", "BINFMT_SCRIPT"]


class Guest(NamedTuple):
    """One boot: its name (the log's suffix but for main's), mmc_core.contexts
    (None: $BLKCTX_GUEST_CONTEXTS), its kernel parameters and its tests
    (None: every test)."""
    name: str
    contexts: Optional[str] = None
    append: str = ""
    tests: Optional[str] = None

    def suffix(self):
        return "" if self.name == "main" else "-" + self.name


# main runs every test with the card's contexts on; the others boot the
# same initramfs with another kernel command line. mmc_test does not look
# at contexts, so it runs only in main. Where contexts are off, on a card
# without them, on a host without CMD23 and on cards whose context fields
# cannot be trusted, the tests that need contexts skip and those for a card
# without them run; the largest large unit checks the granularity;
# aggressive PM runtime-suspends the card between tests; a command queue
# engine host sends every read and write as a queued task (its context in
# CMD44) and runs the storm through CQE recovery; a card with boot
# partitions shows that they get no streams; a card whose erased memory
# reads as ones cannot zero by trimming, so ext4 writes its zeroes;
# parameters out of range leave no card at all, and so does a flash
# geometry the model cannot have (its probe fails).
GUESTS = [
    Guest("main"),
    Guest("nocontexts", "0", "", "block,mmc:emmc_*"),
    Guest("cardnocontexts", "1", "mmc_emu.max_context_id=0", "block,mmc:emmc_*"),
    Guest("nocmd23", "1", "mmc_emu.host_cmd23=0", "mmc:emmc_contexts"),
    Guest("capsreserved", "1", "mmc_emu.context_caps_reserved=1", "mmc:emmc_contexts"),
    Guest("emmc441", "1", "mmc_emu.ext_csd_rev=5", "mmc:emmc_contexts"),
    Guest("largeunit", "1", "mmc_emu.large_unit_size_mb=256",
          "mmc:emmc_contexts,mmc:emmc_extcsd"),
    Guest("runtimepm", "1", "mmc_emu.aggressive_pm=1", "mmc:emmc_contexts"),
    Guest("cqe", "1", "mmc_emu.cqe=1", "block,mmc:emmc_*"),
    Guest("boot", "1", "mmc_emu.boot_size_kb=4096", "mmc:emmc_contexts"),
    Guest("erasedones", "1", "mmc_emu.erased_ones=1", "mmc:emmc_policies"),
    Guest("badparams", "1", "mmc_emu.size_mb=0 mmc_emu.max_context_id=16 "
          "mmc_emu.large_unit_size_mb=0 mmc_emu.ext_csd_rev=9 mmc_emu.boot_size_kb=100",
          "mmc:emmc_contexts"),
    Guest("badftl", "1", "mmc_emu.ftl_block_kb=6", "mmc:emmc_contexts"),
]


class Settings(NamedTuple):
    """What the environment asks of the guests (tools/blkctx selftests
    --help); cli.py checked the seconds."""
    build: str
    timeout: int
    test_timeout: int
    targets: str
    tests: str
    contexts: str
    append: str
    guests: List[str]

    @classmethod
    def from_environment(cls, env=os.environ):
        return cls(build=env.get("BLKCTX_GUEST_BUILD") or "kunit",
                   timeout=int(env.get("BLKCTX_GUEST_TIMEOUT") or 900),
                   test_timeout=int(env.get("BLKCTX_GUEST_TEST_TIMEOUT") or 120),
                   targets=env.get("BLKCTX_SELFTEST_TARGETS") or "block mmc",
                   tests=env.get("BLKCTX_SELFTESTS") or "",
                   contexts=env.get("BLKCTX_GUEST_CONTEXTS") or "1",
                   append=env.get("BLKCTX_GUEST_APPEND") or "",
                   guests=[g for g in (env.get("BLKCTX_GUESTS") or "").split(",") if g])


class Counts(NamedTuple):
    passed: int
    failed: int
    skipped: int


def targets(spec, tree=None):
    """The selftest targets of SPEC as (name, directory): a directory of
    TREE/tools/testing/selftests, NAME=DIR, or a DIR whose name becomes the
    collection."""
    tree = tree or common.TREE
    found = []
    for target in spec.split():
        if "=" in target:
            name, directory = target.split("=", 1)
        elif "/" in target:
            name, directory = os.path.basename(target.rstrip("/")), target
        else:
            name, directory = target, os.path.join(tree, "tools/testing/selftests", target)
        if not os.path.isfile(os.path.join(directory, "Makefile")):
            raise Failure("guest: selftest target %s: no Makefile in %s" % (target, directory))
        found.append((name, os.path.realpath(directory)))
    return found


def make_src(tree, src, wanted):
    """SRC: TREE seen through symlinks down to tools/testing/selftests, where
    each target of WANTED that is not in the tree is copied, so that
    kselftest's own Makefiles build it as if it were."""
    shutil.rmtree(src, ignore_errors=True)
    rel = ""
    for step in ("tools", "testing", "selftests", None):
        os.makedirs(os.path.join(src, rel), exist_ok=True)
        for name in sorted(os.listdir(os.path.join(tree, rel))):
            if name != step and (step or not name.startswith(".")):
                os.symlink(os.path.join(tree, rel, name), os.path.join(src, rel, name))
        if step:
            rel = os.path.join(rel, step)
    selftests = os.path.join(src, rel)
    for name, directory in wanted:
        if directory != os.path.realpath(os.path.join(tree, rel, name)):
            say("guest: selftest target %s from %s (not in the tree)" % (name, directory))
            path = os.path.join(selftests, name)
            if os.path.lexists(path):
                os.unlink(path)
            shutil.copytree(directory, path, symlinks=True)
    return selftests


def run_logged(cmd, what, log):
    """CMD with its output in LOG, a progress line a minute; the log's end
    and a Failure when it fails."""
    with open(log, "w") as out:
        status = procs.run(cmd, what, procs.progress_seconds(), out=out)
    if status != 0:
        common.show_log_end(log, 30)
        raise Failure("%s failed; log: %s" % (what, log))


def build_selftests(arch, dest, wanted, tree=None, guest_dir=None):
    """Build the targets WANTED statically with kselftest's make and install
    them in DEST with kselftest-list.txt."""
    tree = tree or common.TREE
    base = os.path.join(guest_dir or GUEST_DIR, arch)
    ksft = os.path.join(base, "ksft")
    facts = common.ARCHES[arch]
    kmake = ["make", "-C", tree, "O=" + ksft, "ARCH=" + facts.linux]
    smake = ["CC=%sgcc" % facts.cross_compile, "USERLDFLAGS=-static", "-j" + common.JOBS]
    # a native build leaves ARCH to each Makefile, as "make -C
    # tools/testing/selftests" does; a cross build names it
    if facts.cross_compile:
        kmake.append("CROSS_COMPILE=" + facts.cross_compile)
        smake += ["ARCH=" + facts.linux, "CROSS_COMPILE=" + facts.cross_compile]
    os.makedirs(ksft, exist_ok=True)
    # kselftest includes the tree's UAPI headers from $O/usr/include
    run_logged(kmake + ["-s", "headers_install"], "guest: headers_install for " + arch,
               os.path.join(ksft, "headers.log"))
    selftests = make_src(tree, os.path.join(base, "src"), wanted)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.rmtree(os.path.join(ksft, "kselftest"), ignore_errors=True)
    names = " ".join(name for name, _ in wanted)
    log = os.path.join(ksft, "build.log")
    run_logged(["make", "-C", selftests, "O=" + ksft] + smake +
               ["TARGETS=" + names, "KSFT_INSTALL_PATH=" + dest, "install"],
               "guest: building the selftests (%s) for %s" % (names, arch), log)
    with open(log, errors="replace") as f:
        for line in f:
            if "warning:" in line:
                sys.stderr.write(line)
    listed = os.path.join(dest, "kselftest-list.txt")
    if not os.path.isfile(listed) or os.path.getsize(listed) == 0:
        raise Failure("guest: the selftests (%s) list no test" % names)


def write_init(path, test_timeout):
    """The guest's /init (tools/guest/init, a POSIX sh script for busybox):
    it mounts what tests use, runs each test of kselftest-list.txt (or those
    blkctx.tests= selects) as a KTAP subtest, prints SENTINEL and resets,
    which ends QEMU's -no-reboot."""
    with open(os.path.join(REPO, "tools/guest/init")) as f:
        text = f.read()
    text = text.replace("@TEST_TIMEOUT@", str(test_timeout)).replace("@SENTINEL@", SENTINEL)
    # a truncated /init would look like a guest that crashed
    lines = text.splitlines()
    if 'echo "%s"' % SENTINEL not in lines or lines[-1] != "reboot -f":
        raise Failure("guest: tools/guest/init does not print the sentinel and reset at its end")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def apt_ready(arch):
    """apt has the package lists of ARCH's guest (blkctx.sh's
    guest_apt_ready, which setup runs before python3 exists)."""
    darch = common.ARCHES[arch].deb_arch
    common.run_bash(["apt-ready", darch], "guest: apt's %s lists" % darch,
                    "guest: apt has no %s package lists (see above)" % darch)


def pack(stage, out):
    """STAGE as a gzip newc cpio in OUT, in a stable order, owned by root."""
    names = []
    for top, dirs, files in os.walk(stage):
        for name in dirs + files:
            names.append(os.fsencode("." + os.path.join(top, name)[len(stage):]))
    listing = out + ".list"
    with open(listing, "wb") as f:
        f.write(b"".join(name + b"\n" for name in sorted(names)))
    try:
        status = procs.run(["bash", "-c", 'set -o pipefail; cd "$1" && '
                            'cpio -o -H newc -R 0:0 --quiet <"$2" | gzip -9n >"$3"',
                            "pack", stage, listing, out + ".tmp"],
                           "guest: packing " + out, procs.progress_seconds())
        if status != 0:
            raise Failure("guest: cannot pack " + out)
        os.replace(out + ".tmp", out)
    finally:
        for path in (listing, out + ".tmp"):
            if os.path.exists(path):
                os.unlink(path)


def make_initramfs(arch, out, settings, guest_dir=None):
    """The root, the selftests of SETTINGS.targets and /init as OUT."""
    base = os.path.join(guest_dir or GUEST_DIR, arch)
    wanted = targets(settings.targets)
    apt_ready(arch)
    guest_root.rootfs(arch, guest_dir or GUEST_DIR)
    stage = os.path.join(base, "initramfs.d")
    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(stage)
    try:
        # cp -a keeps the root's hard links (mke2fs and mkfs.ext4 are one file)
        if procs.run(["cp", "-a", os.path.join(base, "root") + "/.", stage + "/"],
                     "guest: copying the root", procs.progress_seconds()) != 0:
            raise Failure("guest: cannot copy the root")
        build_selftests(arch, os.path.join(stage, "kselftest"), wanted, guest_dir=guest_dir)
        write_init(os.path.join(stage, "init"), settings.test_timeout)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        pack(stage, out)
        with open(os.path.join(stage, "kselftest", "kselftest-list.txt")) as f:
            tests = sum(1 for line in f if line.strip())
        say("guest: %s initramfs %s: %d KiB, %d tests" % (
            arch, out, os.path.getsize(out) // 1024, tests))
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def missing_kconfig(config, arch, directories):
    """The options missing from the kernel .config CONFIG that an ARCH guest
    needs, or that a target directory's "config" file (kselftest's list of
    the options its tests need) asks for."""
    with open(config, errors="replace") as f:
        have = set(f.read().splitlines())
    missing = ["CONFIG_%s=y" % o for o in GUEST_KCONFIG + common.ARCHES[arch].kconfig
               if "CONFIG_%s=y" % o not in have]
    for directory in directories:
        try:
            with open(os.path.join(directory, "config"), errors="replace") as f:
                wanted = f.read().splitlines()
        except FileNotFoundError:
            continue
        missing += [line for line in wanted
                    if line.startswith("CONFIG_") and "=" in line and line not in have]
    return missing


def kernel_line(guest_, settings):
    """The kernel command line of GUEST_ after the console's."""
    words = ["kunit.enable=0", "panic=-1",
             # a task blocked for a minute is a hang the console shows (judged)
             "sysctl.kernel.hung_task_timeout_secs=60",
             # eMMC contexts are opt-in: the guests turn them on unless told not to
             "mmc_core.contexts=" + (guest_.contexts or settings.contexts)]
    # the guest's own, then the user's for every guest; tests the user
    # named replace the guest's own
    words += guest_.append.split() + settings.append.split()
    tests = settings.tests or guest_.tests
    if tests:
        words.append("blkctx.tests=" + tests)
    return " ".join(words)


def judged(arch, log, status, timeout, tree=None):
    """guest.judge's counts of a boot; a judge that crashes is a failure."""
    try:
        return Counts(*guest.judge(arch, log, status, tree or common.TREE, timeout, SENTINEL))
    except Exception as e:  # pylint: disable=broad-except
        say("selftests: %s: tools/lib/guest.py could not judge %s: %s" % (arch, log, e))
        return Counts(0, 1, 0)


def failed_before_boot(arch, why):
    say("selftests: %s: %s" % (arch, why))
    common.report("selftests", 0, 1, 0)
    return Counts(0, 1, 0)


def run_guest(arch, settings, guest_, initrd=None, save=None, echo=True):
    """Boot GUEST_ on ARCH's kernel and count it (reported to test as
    "selftests"): INITRD boots that initramfs, or one is built, and copied
    to SAVE when given. ECHO: the counts on standard output."""
    kdir = os.path.join(common.BUILD, "%s-%s" % (settings.build, arch))
    log = os.path.join(common.BUILD, "selftests-%s%s.log" % (arch, guest_.suffix()))
    config = os.path.join(REPO, "qemu_configs", arch + ".py")
    t0 = time.monotonic()
    # a guest that fails before its boot leaves no earlier boot's log to read
    if os.path.exists(log):
        os.unlink(log)
    # plain emulation always: qemu_configs/x86_64.py reads it
    os.environ.pop("BLKCTX_KVM", None)
    try:
        kernel = os.path.join(kdir, qemu_params.load(common.TREE, config).kernel_path)
    except Exception as e:  # pylint: disable=broad-except
        return failed_before_boot(arch, "cannot read qemu_configs/%s.py through the tree's "
                                  "kunit_kernel: %s" % (arch, e))
    if not os.path.isfile(kernel):
        return failed_before_boot(arch, "no kernel %s (tools/blkctx kunit %s builds it)"
                                  % (kernel, arch))
    if settings.build == "kunit":
        try:
            with open(os.path.join(kdir, ".blkctx-tree")) as f:
                built_from = f.read().strip()
        except OSError:
            built_from = ""
        try:
            state = common.tree_state()
        except (OSError, subprocess.CalledProcessError):
            # an unreadable tree has no state: then no kernel matches it
            state = None
        if built_from != state:
            return failed_before_boot(arch, "%s was not built from the tree as it is now "
                                      "(tools/blkctx kunit %s builds it)" % (kernel, arch))
    wanted = targets(settings.targets)
    try:
        missing = missing_kconfig(os.path.join(kdir, ".config"), arch, [d for _, d in wanted])
    except OSError as e:
        return failed_before_boot(arch, "cannot read the kernel's .config: %s" % e)
    if missing:
        return failed_before_boot(arch, "%s/.config lacks %s (add them to kunitconfig, or "
                                  "qemu_configs/%s.py for one architecture, and run "
                                  "tools/blkctx kunit %s)" % (kdir, " ".join(missing), arch, arch))
    # one run per architecture at a time: the machine's users share the cache
    os.makedirs(GUEST_DIR, exist_ok=True)
    with open(os.path.join(GUEST_DIR, arch + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not initrd:
            initrd = os.path.join(GUEST_DIR, arch, "initramfs.cpio.gz")
            make_initramfs(arch, initrd, settings)
            if save:
                shutil.copyfile(initrd, save)
        start = time.monotonic()
        say("selftests: booting %s%s (log: %s, timeout %ds)" % (
            arch, " " + guest_.name if guest_.name != "main" else "", log, settings.timeout))
        status = guest.boot_guest(arch, common.TREE, config, kernel, initrd,
                                  kernel_line(guest_, settings), log, settings.timeout,
                                  procs.progress_seconds())
        counts = judged(arch, log, status, settings.timeout)
    line = "selftests: %s: %d passed, %d failed, %d skipped (initramfs %ds, boot and run %ds)" % (
        arch, *counts, start - t0, time.monotonic() - start)
    if echo:
        print(line, flush=True)
    else:
        say(line)
    common.report("selftests", *counts)
    return counts


def command_selftests(arches, settings):
    """Every guest of GUESTS (or of $BLKCTX_GUESTS) on each architecture;
    0 when every one passed."""
    names = [g.name for g in GUESTS]
    for name in settings.guests:
        if name not in names:
            raise Failure('BLKCTX_GUESTS: no guest "%s"; the guests are: %s'
                          % (name, ",".join(names)))
    common.tree_current()
    totals = Counts(0, 0, 0)
    for arch in arches or list(common.ARCHES):
        # one initramfs per architecture, built by the first guest to boot:
        # the guests differ only in the kernel's command line
        fd, initrd = tempfile.mkstemp(prefix="blkctx-initramfs.")
        os.close(fd)
        try:
            for guest_ in GUESTS:
                if settings.guests and guest_.name not in settings.guests:
                    continue
                built = os.path.getsize(initrd) > 0
                counts = run_guest(arch, settings, guest_, initrd if built else None,
                                   None if built else initrd)
                totals = Counts(*(a + b for a, b in zip(totals, counts)))
        finally:
            os.unlink(initrd)
    print("selftests: %d passed, %d failed, %d skipped" % totals, flush=True)
    return 0 if totals.failed == 0 else 1


# what ctxdemo prints, which /init indents by four spaces: its own lines,
# and the table of files
DEMO_LINE = re.compile(r"^    (ctxdemo: .*|file  .*|[a-z]*\.[a-z0-9]* +[0-9].*)$")


def command_demo(settings):
    """Boot the patched kernel with the emulated eMMC, make ext4, write
    files and show, from the card's log, which context each landed in."""
    common.run_setup("demo")
    tree_step.Tree().prepare()
    kunit_step.build("x86_64", "demo")
    settings = settings._replace(targets="demo=" + os.path.join(REPO, "tools/guest/demo"))
    counts = run_guest("x86_64", settings, Guest("demo"), echo=False)
    log = os.path.join(common.BUILD, "selftests-x86_64-demo.log")
    for line in guest.read_lines(log):
        found = DEMO_LINE.match(line.replace("\r", ""))
        if found:
            print(found.group(1))
    sys.stdout.flush()
    if counts.failed:
        raise Failure("demo: the guest run failed; see " + log)
    return 0


def main(argv, lock=True):
    parser = argparse.ArgumentParser(prog="selftests_step.py",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("selftests")
    # not choices: argparse checks an empty list against them
    p.add_argument("arch", nargs="*", type=common.arch_name)
    sub.add_parser("demo")
    p = sub.add_parser("guest")
    p.add_argument("arch", type=common.arch_name)
    p.add_argument("--name", required=True, help="the log is build/selftests-ARCH-NAME.log")
    p.add_argument("--build", required=True, help="boot build/BUILD-ARCH")
    p.add_argument("--targets", required=True, help="as $BLKCTX_SELFTEST_TARGETS")
    p.add_argument("--append", default="", help="the guest's kernel parameters")
    p.add_argument("--timeout", type=guest.seconds, required=True)
    opts = parser.parse_args(argv)

    def body():
        settings = Settings.from_environment()
        if opts.what == "guest":
            settings = settings._replace(build=opts.build, targets=opts.targets,
                                         timeout=opts.timeout)
            counts = run_guest(opts.arch, settings, Guest(opts.name, append=opts.append))
            return 0 if counts.failed == 0 else 1
        if lock:
            common.lock(" ".join(argv))
        if opts.what == "demo":
            return command_demo(settings)
        return command_selftests(opts.arch, settings)

    return common.run_command(opts.what, body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
