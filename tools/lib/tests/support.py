# SPDX-License-Identifier: GPL-2.0
"""What the selfcheck's cases share: the paths, a scratch directory per
test, and a way to run a command or some Python in a process of its own
(a case whose code exits or dies ends only that process)."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import unittest

TESTS = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.dirname(TESTS)
REPO = os.path.dirname(os.path.dirname(LIB))
CANNED = os.path.join(REPO, "tools", "selfcheck")
CACHE = os.path.realpath(os.environ.get("BLKCTX_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "blkctx"))
# the kernel tree prepare made: its kunit_parser and kunit_kernel
TREE = os.path.join(CACHE, "linux")
BLKCTX_SH = os.path.join(LIB, "blkctx.sh")


class Outcome:
    """A finished process: its status and what it printed (stdout and
    stderr together unless split)."""

    def __init__(self, status, out, err=""):
        self.status = status
        self.out = out
        self.err = err

    def __repr__(self):
        return "status %d\n%s%s" % (self.status, self.out, self.err)

    def text(self):
        """The output, then "status N" if N is not 0 (bash's `|| echo`)."""
        return self.out + ("status %d\n" % self.status if self.status else "")


def run(args, env=None, unset=(), cwd=None, stdin=None, split=False, timeout=600):
    """Run ARGS (a list, or a string for bash -c) with the environment
    changed by ENV and without the names in UNSET."""
    environ = dict(os.environ)
    for name in unset:
        environ.pop(name, None)
    environ.update(env or {})
    if isinstance(args, str):
        args = ["bash", "-c", args]
    done = subprocess.run(args, env=environ, cwd=cwd, text=True, timeout=timeout,
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                          stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE if split else subprocess.STDOUT)
    return Outcome(done.returncode, done.stdout, done.stderr or "")


def python(code, *args, env=None, unset=(), cwd=None, stdin=None, split=False):
    """Run CODE in a python3 of its own, tools/lib on its path."""
    environ = {"PYTHONPATH": LIB}
    environ.update(env or {})
    return run([sys.executable, "-B", "-c", code] + [str(a) for a in args], env=environ,
               unset=unset, cwd=cwd, stdin=stdin, split=split)


def bash(script, *args, env=None, unset=(), cwd=None, stdin=None, split=False):
    """Run SCRIPT in a bash that sourced tools/lib/blkctx.sh (its functions
    only), with ARGS as $1..."""
    code = '. "%s"\n%s' % (BLKCTX_SH, script)
    return run(["bash", "-c", code, "bash"] + [str(a) for a in args], env=env, unset=unset,
               cwd=cwd, stdin=stdin, split=split)


class Case(unittest.TestCase):
    """A test with a scratch directory of its own, self.tmp."""

    maxDiff = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="blkctx-selfcheck.")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def path(self, *names):
        return os.path.join(self.tmp, *names)

    def write(self, name, text, mode=None):
        path = self.path(name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        if mode is not None:
            os.chmod(path, mode)
        return path

    def same(self, name, expected, actual):
        """One case: ACTUAL is EXPECTED."""
        with self.subTest(name):
            if expected != actual:
                self.fail("expected:\n%s\ngot:\n%s" % (expected, actual))

    def has(self, name, line, text):
        """One case: a line of TEXT has LINE in it."""
        with self.subTest(name):
            if line not in text:
                self.fail("expected a line with:\n%s\ngot:\n%s" % (line, text))

    def need_tree(self, *files):
        """The kernel tree's FILES are there (in setUp: else each test of
        the class fails once, saying so)."""
        for name in files:
            if not os.path.exists(os.path.join(TREE, name)):
                self.fail("no %s (run tools/blkctx prepare)" % os.path.join(TREE, name))


def scratch_tree(top):
    """A scratch repository TOP/repo (empty series/, kunit/, selftests/)
    and cache TOP/cache whose linux/ is a git tree as prepare leaves one:
    the tag pristine, the branch blkctx one commit of the series' author
    ahead, source version "1"."""
    for sub in ("repo/series", "repo/kunit", "repo/selftests", "cache/linux/scripts"):
        os.makedirs(os.path.join(top, sub), exist_ok=True)
    linux = os.path.join(top, "cache", "linux")

    def put(name, text):
        with open(os.path.join(linux, name), "w") as f:
            f.write(text)

    def git(*args):
        subprocess.run(["git"] + list(args), cwd=linux, check=True,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)

    git("init", "-q", "-b", "base")
    put("Makefile", "kernelversion:\n\t@echo 6.12.0\n")
    put("a.c", "a\nb\n")
    put("z.c", "x\n")
    # a maintainer for --m, a list for --l (perl, not shell, expands it)
    put("scripts/get_maintainer.pl",
        'print((grep { $_ eq "--m" } @ARGV) ? "Some Maintainer <maint\\@example.org>\\n"'
        ' : "list\\@example.org\\n");\n')
    git("add", "-A")
    git("commit", "-q", "-m", "pristine")
    git("tag", "pristine")
    git("checkout", "-q", "-b", "blkctx")
    put("a.c", "a\nb\nc\n")
    put("z.c", "y\n")
    git("commit", "-q", "-am", "block: a change", "-m", "Because.",
        "-m", "Signed-off-by: blkctx developers <devel@blkctx.invalid>")
    put(".git/blkctx-source", "1\n")
    return top


TREE_STEP = """import sys, tree_step
tree = tree_step.Tree(sys.argv[1] + '/repo', sys.argv[1] + '/cache', '/nonexistent')
def run(function, *args):
    return tree_step.common.run_command('step', lambda: function(*args) or 0)
"""


def tree_step(top, code, *args, env=None, unset=(), split=False):
    """python3 CODE with "tree", a tree_step.Tree of the scratch repository
    and cache of scratch_tree(TOP), and "run" to call a function as a
    command's main (a Failure said, status 1); ARGS in sys.argv[2:]. A
    status other than 0 is printed after the output, as "status N".
    SPLIT: stderr apart, in .err (as a bash $(...) leaves it out)."""
    environ = {"BLKCTX_CACHE": os.path.join(top, "cache"), "BLKCTX_TARBALL": "/nonexistent"}
    environ.update(env or {})
    done = python(TREE_STEP + code, top, *args, env=environ, unset=unset, split=split)
    done.out = done.text()
    return done


def caught(compute):
    """COMPUTE()'s value, or what it raised as text: an in-process case
    that raises fails under its own name."""
    try:
        return compute()
    except Exception:
        return traceback.format_exc()


def seconds_since(start):
    """Whole seconds since START (time.monotonic), 0 under 5: "at once"."""
    ran = int(time.monotonic() - start)
    return 0 if ran < 5 else ran


def in_time(start, limit):
    """"in time" if LIMIT seconds have not passed since START
    (time.monotonic), else how many did: a timeout plus its stop, with
    room for a loaded machine, and well short of a hang."""
    ran = time.monotonic() - start
    return "in time" if ran < limit else "after %d s" % ran


def pid_of(pid):
    """PID, or the number the file PID holds; None if it holds none."""
    if not isinstance(pid, str):
        return pid
    try:
        with open(pid) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def alive(pid):
    """Whether process PID (a number, or a file that holds it) still runs:
    a zombie, killed and waiting for a parent to reap it, does not."""
    pid = pid_of(pid)
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError, TypeError):
        return False


def kill(pid):
    """Stop process PID (a number, or a file that holds it) if it runs: a
    case that failed leaves nothing behind."""
    pid = pid_of(pid)
    if pid is not None and alive(pid):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def signal_child(top):
    """TOP/child: a grandchild in the foreground of its parent (as QEMU
    under timeout), which says when it has started (TOP/started) and who
    it is (TOP/grandchild)."""
    os.makedirs(top, exist_ok=True)
    with open(os.path.join(top, "child"), "w") as f:
        f.write("sh -c 'echo $$ >\"%s/grandchild\"; : >\"%s/started\"; exec sleep 60'\n"
                % (top, top))


class Signalled:
    """What signal_run saw: the status, the seconds (0 under 5), whether
    the grandchild still runs, and the output."""

    def __init__(self, status, seconds, still_runs, out, started=True):
        self.status = status
        self.seconds = seconds
        self.alive = still_runs
        self.out = out
        self.started = started

    def outcome(self, who):
        """As the cases expect it: "status N in S s", and what is wrong."""
        text = "status %d in %d s" % (self.status, self.seconds)
        if not self.started:
            text += ", the %s's sleep never started" % who
        if self.alive:
            text += ", the %s's sleep still runs" % who
        if "went on" in self.out:
            text += ", it went on"
        return text


def signal_run(top, signum, cmd, env=None):
    """Run CMD (a list, or a string for bash -c), its output in TOP/out,
    and send it SIGNUM once TOP/child's grandchild has started. SIGINT
    reset to its default: a run started with it ignored (nohup ... &)
    passes that on, and a signal ignored on entry stays ignored. A process
    group of its own, as a job of an interactive shell: what it signals
    cannot be the selfcheck."""
    started = os.path.join(top, "started")
    grandchild = os.path.join(top, "grandchild")
    for path in (started, grandchild):
        if os.path.exists(path):
            os.unlink(path)
    if isinstance(cmd, str):
        cmd = ["bash", "-c", cmd]
    environ = dict(os.environ)
    environ.update(env or {})
    with open(os.path.join(top, "out"), "w") as out:
        proc = subprocess.Popen(["env", "--default-signal=INT"] + cmd, env=environ,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                process_group=0)
    for _ in range(300):
        if os.path.exists(started):
            break
        time.sleep(0.1)
    # "at once" counts from the signal, not from a slow start
    start = time.monotonic()
    proc.send_signal(signum)
    try:
        # far longer than "at once": only a hang gets here
        status = proc.wait(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        status = proc.wait()
    status = 128 - status if status < 0 else status
    seconds = seconds_since(start)
    # killed, it may stay a zombie for a moment
    for _ in range(20):
        if not alive(grandchild):
            break
        time.sleep(0.1)
    still = alive(grandchild)
    # the case fails; the sleep must not outlive it
    kill(grandchild)
    with open(os.path.join(top, "out"), errors="replace") as f:
        return Signalled(status, seconds, still, f.read(), os.path.exists(started))
