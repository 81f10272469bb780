# SPDX-License-Identifier: GPL-2.0
"""procs.py and common.lock: the progress lines of a long command, what an
interrupt stops, and the cache's lock as the commands written in Python
take it."""

import contextlib
import io
import os
import pwd
import re
import shlex
import signal
import sys
import time

import support

if support.LIB not in sys.path:
    sys.path.insert(0, support.LIB)

import guest  # noqa: E402
import procs  # noqa: E402


def procs_code(code, *args, env=None, unset=(), split=False):
    """python3 CODE ARGS in a process of its own, procs and sys imported; a
    status other than 0 is printed after the output, as "status N"."""
    done = support.python("import sys, procs\n" + code, *args, env=env, unset=unset,
                          split=split)
    done.out = done.text()
    return done


class Progress(support.Case):
    """procs.run's progress lines, status, log and files; guest.py's tests
    so far; the builds' make."""

    def test_run(self):
        """procs.run: the status, the log, a progress line a second"""
        out = self.path("progress")
        os.makedirs(out + ".d")
        hour_ago = time.time() - 3600
        for name in ("since", "old.o"):
            self.write("progress.d/" + name, "")
            os.utime(out + ".d/" + name, (hour_ago, hour_ago))
        self.write("progress.d/new.o", "")
        done = procs_code("""with open(sys.argv[1] + ".log", "w") as out:
    print(procs.run(["sh", "-c", "echo made; sleep 2.5; exit 3"], "step",
                    procs.progress_seconds(), out=out,
                    detail=lambda: procs.objects_since(sys.argv[1] + ".d",
                                                       sys.argv[1] + ".d/since")))""",
                          out, env={"BLKCTX_PROGRESS_SECONDS": "1"}, split=True)
        self.same("progress: the command's status", "3", done.out.rstrip("\n"))
        with open(out + ".log") as f:
            self.same("progress: the command's output in its log", "made", f.read().rstrip("\n"))
        # a loaded machine may tick at 2 and 3 s instead of 1 and 2 s
        lines = done.err.count("\n")
        with self.subTest("progress: a line a second while it runs"):
            if not (1 <= lines <= 3 and all(
                    re.fullmatch("blkctx: step: running for 0 min [0-9] s; 1 objects compiled",
                                 line) for line in done.err.splitlines())):
                self.fail(done.err)

    def test_so_far(self):
        """guest.py's tests so far, for the progress line of a boot"""
        self.same("progress: a guest's tests so far",
                  "2 of 2 tests done, last started: mmc: emmc_contexts (1 of its cases done)",
                  guest.so_far(guest.read_lines(os.path.join(support.CANNED, "guest-pass.log"))))
        self.same("progress: a guest that has not planned yet",
                  "0 of ? tests done", guest.so_far(guest.read_lines("/dev/null")))

    def test_lock_free(self):
        """procs.run: the command holds none of the caller's files (a
        guest's lock would stay taken until it ended)"""
        out = self.path("progress")
        done = procs_code("""import fcntl, subprocess
with open(sys.argv[1] + ".lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    procs.run(["sh", "-c", "sleep 1 & echo started"], "step", 30, out=subprocess.DEVNULL)
print(subprocess.run(["flock", "-n", sys.argv[1] + ".lock", "true"]).returncode
      and "held" or "free")""",
                          out, split=True)
        self.same("progress: the caller's lock is free once the command is done", "free",
                  done.out.rstrip("\n"))

    def test_cannot_run(self):
        """procs.run: a program that cannot run is status 127, said in its log"""
        out = self.path("progress")
        # what it says on standard error is not the case's
        with open(out + ".missing", "w") as log, contextlib.redirect_stderr(io.StringIO()):
            status = procs.run([out + ".no-such-program"], "step", 60, out=log)
        with open(out + ".missing") as f:
            got = "status %d\nlog: %s" % (status, f.read().strip())
        self.same("progress: a program that cannot run",
                  "status 127\nlog: step: cannot run %s.no-such-program: No such file or directory"
                  % out, got)

    def test_arch_make(self):
        """The builds' make for each architecture"""
        # common sets CCACHE_DIR on import: a process of its own
        for arch, want in (
                ("x86_64", "make -s -C /t ARCH=x86_64"),
                ("arm", "make -s -C /t ARCH=arm CROSS_COMPILE=arm-linux-gnueabihf-"),
        ):
            done = procs_code('import common; print(*common.arch_make(sys.argv[1], "/t"))', arch,
                              split=True)
            self.same("progress: the builds' make for %s" % arch, want, done.out.rstrip("\n"))


class Interrupt(support.Case):
    """SIGTERM or SIGINT to a command stops it at once, and with it the whole
    process group of the child it runs (a QEMU and what it started), not only
    once that child has ended by itself."""

    def test_interrupt(self):
        """blkctx.sh's run_child and its traps: a signal ends the command and
        what its child started, at once"""
        t = self.path("interrupt")
        support.signal_child(t)
        sh = shlex.quote(support.BLKCTX_SH)
        child = shlex.quote(os.path.join(t, "child"))
        for sig in (signal.SIGTERM, signal.SIGINT):
            run = support.signal_run(t, sig, "set -m; . %s\nrun_child sh %s\n"
                                     "echo 'went on after the child'" % (sh, child))
            self.same("interrupt: %s ends the command and its child's group at once" % sig.name,
                      "status %d in 0 s" % (128 + sig), run.outcome("child"))
        # a step of test's: a tools/blkctx process whose foreground pipeline is
        # a group of its own, with the grandchild under it
        step = "set -m; . %s\nsh %s | cat\necho 'the step went on'" % (sh, child)
        for sig in (signal.SIGTERM, signal.SIGINT):
            run = support.signal_run(t, sig, "set -m; . %s\nrun_child bash -c %s\n"
                                     "echo 'went on after the step'" % (sh, shlex.quote(step)))
            out = "status %d" % run.status
            if run.alive:
                out += ", the step's sleep still runs"
            self.same("interrupt: %s ends a step's foreground pipeline too" % sig.name,
                      "status %d" % (128 + sig), out)


# common.lock in a process of its own: what test's steps run
TAKE = "import common; common.lock('kunit'); print('locked')"


class LockPy(support.Case):
    def test_lock_py(self):
        """The cache's lock as the commands written in Python take it (common.lock)"""
        t = self.path("lockpy")
        os.makedirs(t)
        cache = {"BLKCTX_CACHE": t}
        # test (here a parent) takes it and runs a step with its descriptor;
        # another run, without it, waits
        done = support.python("""import os, subprocess, sys
import common
fd = common.lock('test')
sys.stdout.flush()
subprocess.run(['timeout', '10', sys.executable, '-B', '-c', %r], pass_fds=(fd,))
del os.environ['BLKCTX_LOCK_FD']
done = subprocess.run(['timeout', '2', sys.executable, '-B', '-c', %r])
print('status', done.returncode)""" % (TAKE, TAKE), env=cache, unset=("BLKCTX_LOCK_FD",))
        self.same("lock (python): test's steps share it, another run waits, saying for whom",
                  "locked\nblkctx: waiting for %s, in use by tools/blkctx test "
                  "(pid P, user %s, since X)\nstatus 124"
                  % (t, pwd.getpwuid(os.getuid()).pw_name),
                  re.sub(r"\(pid [0-9]*(.*since ).*\)", r"(pid P\1X)", done.out.rstrip("\n")))
        # a descriptor of another file is no lock: it waits for the holder
        done = support.python("""import os, subprocess, sys
import common
common.lock('test')
other = os.open(sys.argv[1], os.O_RDONLY)
os.environ['BLKCTX_LOCK_FD'] = str(other)
done = subprocess.run(['timeout', '2', sys.executable, '-B', '-c', %r], pass_fds=(other,),
                      stderr=subprocess.DEVNULL)
print('status', done.returncode)""" % TAKE, os.path.join(support.LIB, "arches"), env=cache,
                              unset=("BLKCTX_LOCK_FD",))
        self.same("lock (python): BLKCTX_LOCK_FD of another file holds nothing", "status 124",
                  done.out.rstrip("\n"))
        done = support.python(TAKE + "\nprint(open(%r).read().split(' (')[0])"
                              % os.path.join(t, ".lock"), env=cache)
        self.same("lock (python): taken when free, and says who holds it",
                  "locked\ntools/blkctx kunit", done.out.rstrip("\n"))
        # a child the command starts (descriptors inherited, as os.system
        # does) shares the lock: it does not wait for its own parent
        done = support.python(TAKE + """
import subprocess, sys
subprocess.run(['timeout', '5', sys.executable, '-B', '-c', %r], close_fds=False)""" % TAKE,
                              env=cache, unset=("BLKCTX_LOCK_FD",))
        self.same("lock (python): a child of the command shares it", "locked\nlocked",
                  done.out.rstrip("\n"))
        # a user id without a passwd entry loses only its name
        done = support.python("""import getpass, os
def nobody():
    raise KeyError('getpwuid(): uid not found')
getpass.getuser = nobody
%s
print(open(%r).read().split(', user ')[1].split(',')[0] == 'uid %%d' %% os.getuid())"""
                              % (TAKE, os.path.join(t, "nouser", ".lock")),
                              env={"BLKCTX_CACHE": os.path.join(t, "nouser")})
        self.same("lock (python): a user without a name still takes it", "locked\nTrue",
                  "\n".join(done.out.rstrip("\n").split("\n")[-2:]))
