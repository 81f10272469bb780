# SPDX-License-Identifier: GPL-2.0
"""Children that an interrupt stops: the signal handling that the commands
share, and a long command run with a progress line a minute (every build,
guest boot and package step)."""

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True

TIMEOUT_STATUS = 124


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


def progress_seconds():
    """Seconds between progress lines: BLKCTX_PROGRESS_SECONDS or 60."""
    value = os.environ.get("BLKCTX_PROGRESS_SECONDS") or "60"
    return int(value) if re.fullmatch("[1-9][0-9]*", value) else 60


def objects_since(directory, since):
    """How many objects under DIRECTORY are newer than the file SINCE
    (nothing to say without SINCE)."""
    try:
        start = os.stat(since).st_mtime
    except OSError:
        return ""
    count = 0
    for root, _dirs, files in os.walk(directory):
        for name in files:
            if name.endswith(".o"):
                try:
                    count += os.stat(os.path.join(root, name)).st_mtime > start
                except OSError:
                    pass
    return "%d objects compiled" % count


class Tee:
    """A thread that copies everything a child's PIPE gives to our standard
    output and to the file OUT; a write to OUT that fails is remembered
    (the log is then not whole), one to our standard output is not."""

    def __init__(self, pipe, out):
        self.pipe = pipe
        self.out = out
        self.error = None
        self.thread = threading.Thread(target=self.copy, daemon=True)
        self.thread.start()

    def copy(self):
        with self.pipe:
            for chunk in iter(lambda: self.pipe.read1(65536), b""):
                try:
                    sys.stdout.buffer.write(chunk)
                    sys.stdout.buffer.flush()
                except (OSError, ValueError):
                    pass
                try:
                    self.out.buffer.write(chunk)
                    self.out.buffer.flush()
                except (OSError, ValueError) as e:
                    self.error = self.error or e

    def finish(self, proc, what):
        """Wait for the end of the output: the pipe closes when the last
        process that holds it ends. One that CMD left behind in its session
        is stopped after BLKCTX_STOP_SECONDS, then the rest is copied."""
        self.thread.join(stop_seconds())
        if self.thread.is_alive():
            say("%s: its output is still open after it ended: stopping what it left" % what)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.thread.join(1)
        if self.error:
            say("%s: cannot write its log: %s" % (what, self.error))
            return False
        return True


def run(cmd, what, every, out=None, detail=None, timeout=None, tee=None):
    """Run CMD in a session of its own, its output to the file OUT (or
    ours, and with TEE to the file TEE too), and say every EVERY seconds
    how long WHAT has run, with DETAIL() if given. Its status (128 + N for
    a signal N), TIMEOUT_STATUS when TIMEOUT seconds passed and it was
    stopped, 127 when it could not start, 1 when it passed but TEE could
    not be written. An interrupt (Interrupted) stops it before it
    propagates."""
    proc = None
    copier = None
    if tee:
        out = subprocess.PIPE
    try:
        # a signal while it starts must not leave it running unseen
        with SIGNALS.deferred():
            try:
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT if out else None,
                                        start_new_session=True)
                if tee:
                    copier = Tee(proc.stdout, tee)
            except OSError as e:
                why = "%s: cannot run %s: %s" % (what, cmd[0], e.strerror)
                say(why)
                if out or tee:
                    (tee or out).write(why + "\n")
                return 127
        start = time.monotonic()
        every = max(every, 1)
        while True:
            wait = every
            if timeout is not None:
                left = timeout - (time.monotonic() - start)
                if left <= 0:
                    # a signal now waits for the stop, which KILLs what TERM leaves
                    with SIGNALS.deferred():
                        stop(proc, signal.SIGTERM, what)
                    return TIMEOUT_STATUS
                wait = min(every, left)
            try:
                status = proc.wait(timeout=wait)
                status = 128 - status if status < 0 else status
                if copier and not copier.finish(proc, what) and status == 0:
                    status = 1
                return status
            except subprocess.TimeoutExpired:
                pass
            ran = int(time.monotonic() - start)
            if timeout is None or ran < timeout:
                extra = detail() if detail else ""
                say("%s: running for %d min %d s%s" % (what, ran // 60, ran % 60,
                                                       "; " + extra if extra else ""))
    finally:
        # interrupted: later signals are ignored while it is stopped
        if proc and proc.poll() is None:
            stop(proc, SIGNALS.got or signal.SIGTERM, what)
        # stopped (a timeout or an interrupt): the log gets what it said last
        if copier and copier.thread.is_alive():
            copier.finish(proc, what)

