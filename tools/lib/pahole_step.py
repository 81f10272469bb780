#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The pahole command: struct bio and struct request must not grow. The
objects that define them are built with debug info in the pristine tree (a
worktree at the pristine commit) and in the patched one, each with the
KUnit .config, and pahole compares the sizes.

  pahole [ARCH...]          every architecture (all without)
  size STRUCT OBJECT...     the size pahole gives STRUCT in the first
                            OBJECT that has it (nothing: none has)
"""

import hashlib
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True

# after the line above: these import nothing that writes bytecode
import common  # noqa: E402
from common import Failure  # noqa: E402
import kunit_step  # noqa: E402
import procs  # noqa: E402

# the warnings command (build_step.py) rebuilds some of them with W=1
# (KCFLAGS stays -g)
OBJECTS = ["block/bio.o", "block/blk-mq.o"]
STRUCTS = ["bio", "request"]


def compiler(arch, llvm):
    """make's arguments for gcc (ARCH's cross compiler), or for clang and
    the LLVM tools with LLVM."""
    if llvm:
        return ["LLVM=1", "CC=ccache clang"]
    return ["CC=ccache %sgcc" % common.ARCHES[arch].cross_compile]


def build(arch, tree, out, stamp, llvm=False):
    """The objects of TREE in OUT, unless OUT holds them built from STAMP
    (a commit) with the KUnit .config as it is now (and clang with LLVM)."""
    os.makedirs(out, exist_ok=True)
    if llvm:
        stamp += " llvm"
    want = os.path.join(out, ".config.want")
    kunit_step.config(arch, want)
    # a changed kunitconfig changes both builds: never compare stale objects
    with open(want, "rb") as f:
        stamp += " " + hashlib.sha256(f.read()).hexdigest()[:16]
    built = os.path.join(out, ".blkctx-built")
    try:
        with open(built) as f:
            fresh = f.read().strip() == stamp
    except OSError:
        fresh = False
    # warnings rebuilds some of the objects: one may be missing
    if fresh and all(os.path.isfile(os.path.join(out, o)) for o in OBJECTS):
        return
    config = os.path.join(out, ".config")
    os.replace(want, config)
    log = os.path.join(out, "build.log")
    cmd = common.arch_make(arch, tree) + ["O=" + out] + compiler(arch, llvm) + [
        "KCFLAGS=-g", "olddefconfig", "prepare"] + OBJECTS + ["-j" + common.JOBS]
    with open(log, "w") as f:
        status = procs.run(cmd, "%s: %s build" % ("clang" if llvm else "pahole", arch),
                           procs.progress_seconds(), out=f,
                           detail=lambda: procs.objects_since(out, config))
    if status != 0:
        common.show_log_end(log)
        raise Failure("pahole: build in %s failed" % tree)
    with open(built, "w") as f:
        f.write(stamp + "\n")


def size(struct, objects):
    """The size pahole gives STRUCT in the first of OBJECTS that has it."""
    for obj in objects:
        if not os.path.isfile(obj):
            continue
        run = subprocess.run(["pahole", "-C", struct, obj], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, errors="replace")
        for line in run.stdout.splitlines():
            if "/* size: " in line:
                value = line.split("/* size: ", 1)[1].split(",", 1)[0]
                if value.isdigit():
                    return int(value)
    return None


def pristine_worktree():
    return os.path.join(common.CACHE, "pristine-wt")


def build_dir(side, arch, llvm=False):
    """Where the SIDE (pristine or patched) build of ARCH goes: pahole's
    with gcc, the warnings' clang builds beside them."""
    return os.path.join(common.BUILD, "%s-%s-%s" % ("clang" if llvm else "pahole", side, arch))


def ready(arch, llvm=False):
    """Both builds of ARCH, the pristine one in a worktree of its own."""
    worktree = pristine_worktree()
    pristine = common.git_text(common.TREE, "rev-parse", "pristine")
    common.worktree(worktree, "pristine", head=pristine)
    build(arch, worktree, build_dir("pristine", arch, llvm), pristine, llvm)
    build(arch, common.TREE, build_dir("patched", arch, llvm),
          common.git_text(common.TREE, "rev-parse", "HEAD"), llvm)


def compare(arch, struct, pristine, patched):
    """The line for STRUCT's sizes, and whether it passes: both known, and
    the same."""
    if pristine is not None and pristine == patched:
        return "pahole: %s struct %s: %d bytes, as in the pristine tree" % (
            arch, struct, patched), True
    return "pahole: %s struct %s: %s bytes, pristine %s: FAILED" % (
        arch, struct, "?" if patched is None else patched,
        "?" if pristine is None else pristine), False


def sizes(arch, struct):
    """STRUCT's size in the pristine build's first object that has it, and
    in the same object of the patched build."""
    pristine = None
    for obj in OBJECTS:
        pristine = size(struct, [os.path.join(common.BUILD, "pahole-pristine-" + arch, obj)])
        if pristine is not None:
            break
    patched = size(struct, [os.path.join(common.BUILD, "pahole-patched-" + arch, obj)])
    return pristine, patched


def command_pahole(arches):
    if not shutil.which("pahole"):
        raise Failure("pahole not found: run tools/blkctx setup")
    common.tree_current()
    ok = True
    for arch in arches or list(common.ARCHES):
        ready(arch)
        for struct in STRUCTS:
            line, passes = compare(arch, struct, *sizes(arch, struct))
            print(line, flush=True)
            ok = ok and passes
    return 0 if ok else 1


def main(argv, lock=True):
    def body():
        if argv and argv[0] == "pahole" and all(a in common.ARCHES for a in argv[1:]):
            if lock:
                common.lock(" ".join(argv))
            return command_pahole(argv[1:])
        if len(argv) >= 3 and argv[0] == "size":
            value = size(argv[1], argv[2:])
            if value is not None:
                print(value)
            return 0
        print(__doc__.split("\n\n")[-1].rstrip(), file=sys.stderr)
        return 2

    return common.run_command("pahole", body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
