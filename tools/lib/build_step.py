#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The builds that judge the series beyond its tests: every patch builds
alone, and no patch adds a W=1 or sparse warning.

  build-each [--llvm] [ARCH]  build the tree at every patch of the series
                              (default: x86_64), with the KUnit .config made
                              afresh at each; --llvm builds with LLVM=1
  warnings [ARCH...]          W=1 with gcc and with clang, and sparse, on
                              every C file the series touches, pristine and
                              patched; no call to a 64-bit division helper
                              the kernel lacks (default: all)
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True

# after the line above: these import nothing that writes bytecode
import common  # noqa: E402
from common import REPO, Failure  # noqa: E402
import kunit_step  # noqa: E402
import pahole_step  # noqa: E402
import procs  # noqa: E402
from procs import say  # noqa: E402

LLVM_TOOLS = ("clang", "ld.lld", "llvm-ar")


def kunit_want(arch):
    """The CONFIG_X=V lines that must hold wherever their symbol exists:
    kunitconfig's (every line that is not a comment) and those of
    qemu_configs/ARCH.py, whose last one ends the Python string
    (CONFIG_SERIAL_8250_CONSOLE=y''',)."""
    with open(os.path.join(REPO, "kunitconfig")) as f:
        want = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    with open(os.path.join(REPO, "qemu_configs", arch + ".py")) as f:
        for line in f:
            m = re.match(r"CONFIG_[A-Za-z0-9_]+=[^'\"\n]*", line)
            if m:
                want.append(m.group(0))
    return want


def kconfig_symbols(tree):
    """The CONFIG_ names that the Kconfig files of the git tree TREE define."""
    run = subprocess.run(
        ["git", "-C", tree, "grep", "-hoE",
         r"^[[:space:]]*(menu)?config[[:space:]]+[A-Za-z0-9_]+", "--", "*Kconfig*"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, errors="replace")
    # git grep exits 1 when nothing matches: an empty set, not an error
    if run.returncode not in (0, 1):
        raise Failure("git grep in %s failed" % tree)
    return {"CONFIG_" + line.split()[1] for line in run.stdout.splitlines()}


def kconfig_unmet(want, config, symbols):
    """The lines of WANT (as in kunitconfig) whose symbol is in SYMBOLS but
    that the .config CONFIG does not have: =n is unmet by =y or =m."""
    with open(config) as f:
        have = set(f.read().splitlines())
    unmet = []
    for line in want:
        m = re.fullmatch(r"(CONFIG_[A-Za-z0-9_]+)=(.*)", line)
        if not m or m.group(1) not in symbols:
            continue
        symbol, value = m.groups()
        if value == "n":
            if symbol + "=y" in have or symbol + "=m" in have:
                unmet.append(line)
        elif line not in have:
            unmet.append(line)
    return unmet


def command_build_each(arch, llvm):
    """Build every commit of the series, each with the KUnit .config made
    afresh: olddefconfig at an early commit drops the symbols later patches
    add, and they would then stay off. A kunitconfig line whose symbol the
    commit has must hold, and any compiler warning fails."""
    cross = common.ARCHES[arch].cross_compile
    compiler = ["CC=ccache %sgcc" % cross]
    out = os.path.join(common.BUILD, "each-" + arch)
    if llvm:
        missing = [tool for tool in LLVM_TOOLS if not shutil.which(tool)]
        if missing:
            raise Failure("build-each --llvm needs clang, lld and llvm (%s not found; as root: "
                          "apt-get install clang lld llvm)" % ", ".join(missing))
        compiler = ["LLVM=1", "CC=ccache clang"]
        out += "-llvm"
    common.tree_current()
    commits = common.git_text(common.TREE, "rev-list", "--reverse", "pristine..HEAD").split()
    wt = os.path.join(common.CACHE, "each-wt")
    common.worktree(wt, "pristine")
    os.makedirs(out, exist_ok=True)
    kunit_config = os.path.join(out, "kunit.config")
    kunit_step.config(arch, kunit_config)
    want = kunit_want(arch)
    config = os.path.join(out, ".config")
    log = os.path.join(out, "build.log")
    make = common.arch_make(arch, wt) + ["O=" + out] + compiler
    for n, commit in enumerate(commits, 1):
        subject = common.git_text(common.TREE, "log", "-1", "--format=%s", commit)
        at = "patch %d (%s)" % (n, subject)
        common.git_text(wt, "checkout", "-f", "-q", "--detach", commit)
        say("build-each: %s %d/%d %s" % (arch, n, len(commits), subject))
        shutil.copyfile(kunit_config, config)
        with open(log, "w") as f:
            status = procs.run(make + ["olddefconfig"], "build-each: olddefconfig", 60, out=f)
        if status != 0:
            common.show_log_end(log, 30)
            raise Failure("olddefconfig failed at " + at)
        unmet = kconfig_unmet(want, config, kconfig_symbols(wt))
        if unmet:
            raise Failure("at %s the config lacks %s, which that commit's Kconfig has "
                          "(a dependency added only by a later patch?)" % (at, " ".join(unmet)))
        with open(log, "a") as f:
            status = procs.run(make + ["all", "-j" + common.JOBS],
                               "build-each: %s %d/%d" % (arch, n, len(commits)),
                               procs.progress_seconds(), out=f,
                               detail=lambda: procs.objects_since(out, config))
        if status != 0:
            common.show_log_end(log, 30)
            raise Failure("build failed at " + at)
        with open(log, errors="replace") as f:
            warnings = [line for line in f if "warning:" in line]
        if warnings:
            sys.stderr.write("".join(warnings))
            raise Failure("warnings at " + at)
    say("build-each: all %d patches build on %s%s" % (len(commits), arch,
                                                       " with LLVM=1" if llvm else ""))
    return 0


# W=1 and sparse on every C file the series touches, in the pristine and
# the patched tree: any warning the pristine tree does not have is new.
# They compile into pahole's builds, whose KCFLAGS stays -g so that the
# objects still serve pahole.

def warning_build(arch, tree, out, log, objects, make=common.arch_make, llvm=False):
    """Compile OBJECTS of TREE afresh into OUT with W=1 and sparse (with
    LLVM: clang, without sparse), make's output in LOG; make's status. The
    objects of files TREE does not have (the series adds them) are left
    out: they have no pristine warnings to compare with."""
    objects = [o for o in objects if os.path.isfile(os.path.join(tree, o[:-2] + ".c"))]
    with open(log, "w") as f:
        if not objects:
            return 0
        # W=1 warnings come only with a compile: make would find the
        # objects of the last run up to date and print nothing
        for o in objects:
            try:
                os.unlink(os.path.join(out, o))
            except FileNotFoundError:
                pass
        # -k: one object that fails must not hide the others' warnings
        checks = [] if llvm else ["C=2", "CHECK=sparse"]
        cmd = make(arch, tree) + ["O=" + out] + pahole_step.compiler(arch, llvm) + [
            "KCFLAGS=-g", "W=1"] + checks + ["-k"] + objects + ["-j" + common.JOBS]
        return procs.run(cmd, "warnings: %s %s build" % (arch, "clang" if llvm else "gcc"),
                         procs.progress_seconds(), out=f)


MISSING_TOOL = re.compile(r"(: not found|command not found)$|Error 127")
WARNING = re.compile(r"(warning|error):")


def warning_broken(log, status):
    """Why a build that exited with STATUS is no measure of its warnings (a
    tool missing, or a failure no error explains); None when it is one."""
    if status == 0:
        return None
    with open(log, errors="replace") as f:
        lines = f.read().splitlines()
    for line in lines:
        if MISSING_TOOL.search(line):
            return "a tool is missing: " + line
    if not any(WARNING.search(line) for line in lines):
        return "make exited with status %d, and no warning or error says why" % status
    return None


def warning_lines(tree, log):
    """The warnings and errors in LOG, without TREE's path and the line
    numbers, sorted."""
    found = set()
    with open(log, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not WARNING.search(line):
                continue
            if line.startswith(tree + "/"):
                line = line[len(tree) + 1:]
            found.add(re.sub(r":[0-9]+(:[0-9]+)?:", ":", line, count=1))
    return sorted(found)


def touched_objects(arch):
    """The objects of the C files the series adds or changes that the KUnit
    build of ARCH builds."""
    files = common.git_text(common.TREE, "diff", "--name-only", "--diff-filter=AM", "pristine..HEAD",
                "--", "*.c").split()
    kunit = kunit_step.build_dir(arch)
    return [f[:-2] + ".o" for f in files if os.path.isfile(os.path.join(kunit, f[:-2] + ".o"))]


# libgcc's 64-bit division helpers, which the kernel does not link: a
# "u64 % n" that gcc turns into shifts may become one of these with clang
# (arm32), and then vmlinux does not link
DIVISION_HELPERS = ("__aeabi_uldivmod", "__aeabi_ldivmod", "__udivdi3", "__divdi3",
                    "__umoddi3", "__moddi3")


def division_helpers(arch, out, objects):
    """The calls of OBJECTS built in OUT to DIVISION_HELPERS, as
    "object: symbol"; a Failure when nm cannot read one."""
    found = []
    for obj in objects:
        run = subprocess.run([common.ARCHES[arch].cross_compile + "nm", "-u",
                              os.path.join(out, obj)], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             errors="replace")
        if run.returncode != 0:
            raise Failure("warnings: nm cannot read %s: %s" % (obj, run.stderr.strip()))
        found += ["%s: %s" % (obj, line.split()[-1]) for line in run.stdout.splitlines()
                  if line.split() and line.split()[-1] in DIVISION_HELPERS]
    return found


def warnings_arch(arch, llvm=False):
    """One architecture's verdict with one compiler: its line, and whether
    it passed."""
    name = "%s %s" % (arch, "clang" if llvm else "gcc")
    if not os.path.isfile(os.path.join(kunit_step.build_dir(arch), "vmlinux")):
        return ("warnings: %s: no KUnit build to tell which files are built "
                "(run tools/blkctx kunit %s): FAILED" % (name, arch)), False
    pahole_step.ready(arch, llvm)
    objects = touched_objects(arch)
    if not objects:
        return ("warnings: %s: the KUnit build has no object of a file the series "
                "touches: FAILED" % name), False
    directory = os.path.join(common.BUILD, "warnings-" + arch)
    os.makedirs(directory, exist_ok=True)
    what = "W=1" if llvm else "W=1 and sparse"
    say("warnings: %s: compiling %d objects with %s, pristine and patched (logs in %s)" % (
        name, len(objects), what, directory))
    sides = (("pristine", pahole_step.pristine_worktree()), ("patched", common.TREE))
    logs = {side: os.path.join(directory, "%s%s.log" % (side, "-clang" if llvm else ""))
            for side, _ in sides}
    for side, tree in sides:
        status = warning_build(arch, tree, pahole_step.build_dir(side, arch, llvm), logs[side],
                               objects, llvm=llvm)
        # a build that failed is no measure of its warnings, even when the
        # other side failed with the same error
        if status != 0:
            why = warning_broken(logs[side], status) or "a compile error (see above)"
            common.show_log_end(logs[side])
            return "warnings: %s: the %s build failed: %s: FAILED" % (name, side, why), False
    pristine, patched = (set(warning_lines(tree, logs[side])) for side, tree in sides)
    new = sorted(patched - pristine)
    if new:
        return "warnings: %s: new %s warnings:\n%s" % (
            name, what, "\n".join("    " + line for line in new)), False
    calls = division_helpers(arch, pahole_step.build_dir("patched", arch, llvm), objects)
    if calls:
        return ("warnings: %s: calls to 64-bit division helpers the kernel does not have "
                "(use div_u64() and friends):\n%s" % (
                    name, "\n".join("    " + line for line in calls))), False
    return "warnings: %s: no new %s warnings, no 64-bit division helper, in %s" % (
        name, what, " ".join(objects)), True


def command_warnings(arches):
    missing = [tool for tool in ("sparse",) + LLVM_TOOLS if not shutil.which(tool)]
    if missing:
        raise Failure("%s not found: run tools/blkctx setup" % ", ".join(missing))
    common.tree_current()
    ok = True
    for arch in arches or list(common.ARCHES):
        for llvm in (False, True):
            line, passed = warnings_arch(arch, llvm)
            print(line, flush=True)
            ok = ok and passed
    return 0 if ok else 1


def main(argv, lock=True):
    parser = argparse.ArgumentParser(prog="build_step.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("build-each")
    p.add_argument("--llvm", action="store_true")
    p.add_argument("arch", nargs="?", default="x86_64", type=common.arch_name)
    p = sub.add_parser("warnings")
    # not choices: argparse checks an empty list against them
    p.add_argument("arch", nargs="*", type=common.arch_name)
    opts = parser.parse_args(argv)

    def body():
        if lock:
            common.lock(" ".join(argv))
        if opts.what == "build-each":
            return command_build_each(opts.arch, opts.llvm)
        return command_warnings(opts.arch)

    return common.run_command(opts.what, body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
