#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The checkpatch command: the tree's checkpatch.pl --strict on every patch
file, one run a patch whose typed findings are then judged one by one.

Let through are only CamelCase in ext4's Opt_* mount option constants,
which follow fs/ext4/super.c's own convention, and a mainline commit id the
tree cannot know (it has no history before 6.12) that
tools/upstream-commits.txt lists with the subject the Fixes: tag gives. A
checkpatch.pl that fails with nothing let through failed for another reason
(it crashed): that fails too.

  checkpatch              every patch, a line each and a count
  judge TREE PATCH...     only the judgement, with TREE's checkpatch.pl
"""

import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True

# after the line above: these import nothing that writes bytecode
import common  # noqa: E402

UNKNOWN_ID = re.compile(r"^WARNING:UNKNOWN_COMMIT_ID: Unknown commit id '([0-9a-f]+)'")
OPT_CAMELCASE = re.compile(r"^CHECK:CAMELCASE: Avoid CamelCase: <Opt_[a-z_]*>$")
FINDING = re.compile(r"^(ERROR|WARNING|CHECK):")


def upstream_commit_known(patch, commit, repo=common.REPO):
    """PATCH's Fixes: tag names COMMIT with the subject that
    tools/upstream-commits.txt gives it."""
    subject = None
    with open(os.path.join(repo, "tools", "upstream-commits.txt")) as f:
        for line in f:
            if line.startswith(commit + " "):
                subject = line[len(commit) + 1:].rstrip("\n")
                break
    if not subject:
        return False
    tag = 'Fixes: %s ("%s")' % (commit, subject)
    with open(patch, errors="replace") as f:
        return any(line.rstrip("\n") == tag for line in f)


def judge(patch, tree=None, repo=common.REPO):
    """(passes, checkpatch's output) for PATCH, with the checkpatch.pl of
    TREE (the kernel tree)."""
    run = subprocess.run(["perl", "scripts/checkpatch.pl", "--strict", "--quiet",
                          "--show-types", os.path.abspath(patch)],
                         cwd=tree or common.TREE, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, errors="replace")
    if run.returncode == 0:
        return True, run.stdout
    allowed = 0
    bad = False
    for line in run.stdout.splitlines():
        unknown = UNKNOWN_ID.match(line)
        if line.startswith("WARNING:UNKNOWN_COMMIT_ID:"):
            if unknown and upstream_commit_known(patch, unknown.group(1), repo):
                allowed += 1
            else:
                bad = True
        elif line.startswith("CHECK:CAMELCASE:"):
            if OPT_CAMELCASE.match(line):
                allowed += 1
            else:
                bad = True
        elif FINDING.match(line):
            bad = True
    return not bad and allowed > 0, run.stdout


def command_checkpatch():
    common.tree_current()
    patches = common.patch_files()
    bad = 0
    for patch in patches:
        passes, out = judge(patch)
        name = os.path.basename(patch)
        if passes:
            print("ok       " + name)
        else:
            print("FAILED   " + name)
            for line in out.splitlines():
                print("    " + line)
            bad += 1
        sys.stdout.flush()
    print("checkpatch: %d patches, %d with findings" % (len(patches), bad), flush=True)
    return 0 if bad == 0 else 1


def main(argv, lock=True):
    def body():
        if argv == ["checkpatch"]:
            if lock:
                common.lock("checkpatch")
            return command_checkpatch()
        if len(argv) >= 3 and argv[0] == "judge":
            return 0 if all(judge(patch, argv[1])[0] for patch in argv[2:]) else 1
        print(__doc__.split("\n\n")[-1].rstrip(), file=sys.stderr)
        return 2

    return common.run_command("checkpatch", body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
