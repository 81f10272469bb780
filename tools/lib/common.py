# SPDX-License-Identifier: GPL-2.0
"""What the commands share: the paths and settings, the per-architecture
facts of tools/lib/arches (which tools/lib/blkctx.sh reads too), the
cache's lock, a step's results for "tools/blkctx test", and the patch
files and the kernel tree's state."""

import argparse
import fcntl
import getpass
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Dict, List, NamedTuple

sys.dont_write_bytecode = True

# after the line above: procs imports nothing that writes bytecode
import procs  # noqa: E402
from procs import SIGNALS, Interrupted, say  # noqa: E402

LIB = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(LIB))
CACHE = os.path.realpath(os.environ.get("BLKCTX_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "blkctx"))
TREE = os.path.join(CACHE, "linux")
BUILD = os.path.join(CACHE, "build")
DEBIAN_TARBALL = "/usr/src/linux-source-6.12.tar.xz"
TARBALL = os.environ.get("BLKCTX_TARBALL") or DEBIAN_TARBALL
# as nproc counts: the CPUs this process may run on
JOBS = os.environ.get("BLKCTX_JOBS") or str(len(os.sched_getaffinity(0)))
os.environ.setdefault("CCACHE_DIR", os.path.join(CACHE, "ccache"))


class Arch(NamedTuple):
    """One line of tools/lib/arches."""
    name: str
    linux: str
    cross_compile: str
    deb_arch: str
    triplet: str
    kconfig: List[str]


def read_arches() -> Dict[str, Arch]:
    arches = {}
    path = os.path.join(LIB, "arches")
    with open(path) as table:
        for number, line in enumerate(table, 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if len(words) != 6:
                raise SystemExit("%s:%d: not the six columns of an architecture" % (path, number))
            name, linux, cc, deb, triplet, kconfig = words
            arches[name] = Arch(name, linux, "" if cc == "-" else cc, deb, triplet,
                                kconfig.split(","))
    return arches


ARCHES = read_arches()


def arch_name(value):
    """An argparse type: a name of tools/lib/arches."""
    if value not in ARCHES:
        raise argparse.ArgumentTypeError("unknown architecture %s (known: %s)" % (
            value, " ".join(ARCHES)))
    return value


def arch_make(arch, tree):
    """make for ARCH in TREE: every build of the tools starts with it."""
    facts = ARCHES[arch]
    cmd = ["make", "-s", "-C", tree, "ARCH=" + facts.linux]
    if facts.cross_compile:
        cmd.append("CROSS_COMPILE=" + facts.cross_compile)
    return cmd


def python_signals():
    """The signals as Python has them (cli.py gives SIGPIPE and SIGXFSZ
    their defaults back for blkctx.sh): a reader that goes away is then an
    error that the command handles, stopping what it started, and not the
    end of this process with its children left running."""
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


class Failure(Exception):
    """A command that cannot go on; main() says why and reports it."""


def report(name, passed, failed, skipped):
    """Results for the "tools/blkctx test" that runs this command as one of
    its steps, if any (report_counts in blkctx.sh)."""
    results = os.environ.get("BLKCTX_RESULTS")
    if results:
        with open(results, "a") as f:
            f.write("%s %d %d %d\n" % (name, passed, failed, skipped))


def fail(text):
    """What blkctx.sh's die does: say it, and count one failure more for
    the test that runs this step."""
    say("error: " + text)
    report("die", 0, 1, 0)


def run_bash(args, what, failure):
    """blkctx.sh ARGS (the bash that runs before python3 exists); FAILURE
    when it fails, the one failure test counts (its own die is not)."""
    if procs.run(["env", "-u", "BLKCTX_RESULTS", "bash", os.path.join(LIB, "blkctx.sh")] + args,
                 what, procs.progress_seconds()) != 0:
        raise Failure(failure)


def run_setup(who):
    """tools/blkctx setup, for the commands that begin with it."""
    run_bash(["setup"], who + ": setup", who + ": setup failed (see above)")


def show_log_end(log, lines=20):
    """The last LINES of LOG on standard error: why a build failed."""
    with open(log, errors="replace") as f:
        sys.stderr.write("".join(f.readlines()[-lines:]))


def run_command(name, body):
    """BODY() as a command's main: its status; a Failure, or a file or git
    operation that failed, is said and reported as blkctx.sh's die is, and
    an interrupt stops what runs (procs.SIGNALS) and ends it with 128 + N."""
    python_signals()
    SIGNALS.install()
    try:
        return body()
    except Failure as e:
        fail(str(e))
        return 1
    except (OSError, subprocess.CalledProcessError, UnicodeError) as e:
        fail("%s: %s" % (name, e))
        return 1
    except Interrupted as e:
        say("interrupted" if e.signum == signal.SIGINT else "terminated")
        return 128 + e.signum
    finally:
        SIGNALS.ignoring = True


def lock(command):
    """Hold $CACHE/.lock while the command runs, as blkctx.sh's cache_lock:
    a step of "tools/blkctx test" inherits test's locked descriptor
    (BLKCTX_LOCK_FD); anyone else waits, saying for whom. Returns the
    descriptor, which stays open until the process ends."""
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, ".lock")
    inherited = os.environ.get("BLKCTX_LOCK_FD", "")
    if inherited.isdigit():
        fd = int(inherited)
        try:
            if os.readlink("/proc/self/fd/%d" % fd) == path:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
        except OSError:
            pass
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            with open(path) as f:
                holder = f.read().strip()
        except OSError:
            holder = ""
        say("waiting for %s, in use by %s" % (CACHE, holder or "another run"))
        fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        # a user id without a passwd entry (a container's -u N): only the name is lost
        user = "uid %d" % os.getuid()
    with open(path, "w") as f:
        f.write("tools/blkctx %s (pid %d, user %s, since %s)\n" % (
            command, os.getpid(), user, time.strftime("%Y-%m-%d %H:%M:%S")))
    os.set_inheritable(fd, True)
    os.environ["BLKCTX_LOCK_FD"] = str(fd)
    return fd


def patch_files(repo=REPO) -> List[str]:
    """The patch files in the order git am takes them: series/, kunit/,
    selftests/; the cover letter is not a patch."""
    files = []
    for directory in ("series", "kunit", "selftests"):
        path = os.path.join(repo, directory)
        try:
            names = os.listdir(path)
        except FileNotFoundError:
            continue
        files += [os.path.join(path, name) for name in sorted(names)
                  if len(name) > 11 and name[:4].isdigit() and name[4] == "-"
                  and name.endswith(".patch") and name != "0000-cover-letter.patch"]
    return files


def patches_digest(repo=REPO) -> str:
    """The patch files' digest: prepare and export record it in the tree,
    and a tree with another one is not the files'."""
    digest = hashlib.sha256()
    for path in patch_files(repo):
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


def source_version(tarball=TARBALL) -> str:
    """The version of Debian's linux-source-6.12 that TARBALL comes from;
    "unknown" for a tarball of the user's own, whose version dpkg does not
    know."""
    if os.path.realpath(tarball) != os.path.realpath(DEBIAN_TARBALL):
        return "unknown"
    try:
        run = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "linux-source-6.12"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return "unknown"
    return run.stdout.strip() if run.returncode == 0 and run.stdout.strip() else "unknown"


def tree_git(tree, *args) -> bytes:
    """git in TREE, its output. An interrupt waits for it: a git stopped
    midway (checkout, worktree add) leaves its locks behind."""
    with SIGNALS.deferred():
        return subprocess.run(["git", "-C", tree] + list(args), check=True,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE).stdout


def git_text(tree, *args) -> str:
    """tree_git's output as text, without the newline at its end."""
    return tree_git(tree, *args).decode().strip()


def worktree(path, commit, head=None):
    """A worktree of the kernel tree at PATH, made afresh at COMMIT when
    there is none there, or (with HEAD) when it is at another commit; the
    developer's own tree is left alone."""
    try:
        now = subprocess.run(["git", "-C", path, "rev-parse", "-q", "--verify", "HEAD"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout.strip()
    except OSError:
        now = ""
    if now and (head is None or now == head):
        return
    shutil.rmtree(path, ignore_errors=True)
    tree_git(TREE, "worktree", "prune")
    tree_git(TREE, "worktree", "add", "-q", "--detach", path, commit)


def tree_state(tree=TREE) -> str:
    """The tree's commit and its uncommitted changes, as a digest: a kernel
    built from the tree records it, and a guest boots only a kernel whose
    record matches the tree as it is now."""
    digest = hashlib.sha256(tree_git(tree, "rev-parse", "HEAD") + tree_git(tree, "diff", "HEAD"))
    return digest.hexdigest()[:16]


def tree_record(tree, name):
    """What prepare or export recorded in TREE's .git/NAME, or None."""
    try:
        with open(os.path.join(tree, ".git", name)) as f:
            return f.read().strip()
    except OSError:
        return None


def tree_current(tree=TREE, repo=REPO, tarball=TARBALL, source=None):
    """Raise Failure unless the tree was prepared or exported from the
    patch files as they are now, on the linux-source-6.12 installed now
    (SOURCE, when given, in its place); commits made since in the tree are
    fine."""
    if not os.path.isdir(os.path.join(tree, ".git")):
        raise Failure("no tree: run tools/blkctx prepare")
    source = source or source_version(tarball)
    prepared = tree_record(tree, "blkctx-source") or "unknown"
    if source != "unknown" and prepared != source:
        raise Failure("linux-source-6.12 is %s now, %s was prepared from %s: run tools/blkctx "
                      "prepare to apply the series to it (it refuses while the tree has "
                      "commits that are not exported; export those first)"
                      % (source, tree, prepared))
    if tree_record(tree, "blkctx-applied") != patches_digest(repo):
        raise Failure("series/, kunit/ or selftests/ changed since %s was prepared or exported: "
                      "run tools/blkctx prepare to apply them (it refuses while the tree has "
                      "commits that are not exported; export those first)" % tree)


def main(argv):
    """The patch list, its digest and the tree's state, for the paths a
    selfcheck case gives:
      files REPO                 patch_files, one a line
      digest REPO                patches_digest
      state TREE                 tree_state
"""
    try:
        if len(argv) == 2 and argv[0] == "files":
            for path in patch_files(argv[1]):
                print(path)
        elif len(argv) == 2 and argv[0] == "digest":
            print(patches_digest(argv[1]))
        elif len(argv) == 2 and argv[0] == "state":
            print(tree_state(argv[1]))
        else:
            print("usage:" + main.__doc__.split(":", 1)[1], file=sys.stderr)
            return 2
    except Failure as e:
        fail(str(e))
        return 1
    except (OSError, subprocess.CalledProcessError) as e:
        say("common.py %s: %s" % (argv[0], e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
