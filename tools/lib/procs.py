# SPDX-License-Identifier: GPL-2.0
"""Children that an interrupt stops: the signal handling that runner.py
and guest.py share."""

import contextlib
import os
import re
import signal
import subprocess
import sys


def stop_seconds():
    """How long a child has after TERM (or INT) before it is killed;
    tools/blkctx refuses a value that is not whole seconds."""
    value = os.environ.get("BLKCTX_STOP_SECONDS") or "10"
    return int(value) if re.fullmatch("[0-9]+", value) else 10


def say(text):
    # a closed standard error (a pager or tee ended by the same Ctrl-C)
    # must not keep a child from being stopped
    try:
        print("blkctx: " + text, file=sys.stderr, flush=True)
    except OSError:
        pass


class Interrupted(BaseException):
    """Not an Exception: a handler of errors must not catch it, as none
    catches KeyboardInterrupt."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class Signals:
    """SIGINT and SIGTERM: the first one raises Interrupted, at once or, in a
    deferred section (starting a child, writing results), at its end; later
    ones are ignored, as the first one's stop is under way."""

    def __init__(self):
        self.depth = 0
        self.got = None
        self.raised = False
        self.ignoring = False

    def handler(self, signum, _frame):
        if self.got is not None or self.ignoring:
            return
        self.got = signum
        if not self.depth:
            self.raised = True
            raise Interrupted(signum)

    def install(self):
        signal.signal(signal.SIGINT, self.handler)
        signal.signal(signal.SIGTERM, self.handler)

    @contextlib.contextmanager
    def deferred(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
        if not self.depth and self.got is not None and not self.raised:
            self.raised = True
            raise Interrupted(self.got)


SIGNALS = Signals()


def descendants(pid):
    """The processes below pid, from /proc (no procps in a minimal Debian)."""
    kids = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        # after the command's name, which may hold spaces: state, ppid
        ppid = int(stat.rsplit(") ", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    found, queue = [], [pid]
    while queue:
        for kid in kids.get(queue.pop(0), []):
            found.append(kid)
            queue.append(kid)
    return found


def signal_tree(proc, signum, below_signum):
    """Signal the child's process group (it was started in a session of its
    own), and everything below it: a child may run pipelines as groups of
    their own."""
    below = descendants(proc.pid)
    try:
        os.killpg(proc.pid, signum)
    except OSError:
        pass
    for pid in below:
        try:
            os.kill(pid, below_signum)
        except OSError:
            pass


def stop(proc, signum, what):
    """End the child: its group gets signum, what is below it TERM, and KILL
    all of it if it still runs after stop_seconds()."""
    signal_tree(proc, signum, signal.SIGTERM)
    try:
        proc.wait(timeout=stop_seconds())
    except subprocess.TimeoutExpired:
        pass
    finally:
        # whatever ended the wait, a signal included: KILL, then say so
        if proc.poll() is None:
            signal_tree(proc, signal.SIGKILL, signal.SIGKILL)
            proc.wait()
            say("%s did not stop; killed it" % what)
