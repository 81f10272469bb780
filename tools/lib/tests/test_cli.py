# SPDX-License-Identifier: GPL-2.0
"""The front door, tools/lib/cli.py: every command's --help, arguments and
settings refused before any work (exit 2), what is accepted given to the
command in one form; blkctx.sh's bootstrap where python3 is not installed
yet; the environment variables' documentation; and tree_step.py's mail."""

import glob
import os
import re
import sys

import cli
import support

SENDER = "Mail Tester <tester@example.org>"

# cli.main on sys.argv[2:] with cli.REPO = sys.argv[1], the command it would
# run printed instead of run ("ran COMMAND ARGS", status 0)
CLI = """import sys, cli
cli.REPO = sys.argv[1]
def run(argv):
    print("ran", *argv)
    return 0
sys.exit(cli.main(sys.argv[2:], run=run))
"""


def status(code):
    """A process's status as bash gives it: 128 + N for signal N."""
    return 128 - code if code < 0 else code


class FrontDoor(support.Case):
    """cli.py: --help, arguments refused before any work (exit 2); what is
    accepted goes to blkctx.sh in one form."""

    def cli(self, *args, sender=SENDER, env=None):
        """cli.py's main on ARGS (in a process of its own: it sets signal
        dispositions and exits), with a git identity SENDER (None: none)
        and ENV; its status, then its output, as lines of one text."""
        norepo = self.path("norepo")
        os.makedirs(norepo, exist_ok=True)
        environ = {"HOME": norepo, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
        if sender:
            name, email = re.fullmatch(r"(.*) <(.*)>", sender).groups()
            environ.update(GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email)
        environ.update(env or {})
        # in an empty directory: a relative DIR (mail a b) is new there
        done = support.python(CLI, norepo, *args, env=environ, cwd=norepo,
                              unset=("GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"))
        return "%d\n%s" % (done.status, done.out)

    def first(self, *args, **kwargs):
        """The status of cli(ARGS)."""
        return self.cli(*args, **kwargs).split("\n")[0]

    def second(self, *args, **kwargs):
        """The second line of cli(ARGS): what would run."""
        lines = self.cli(*args, **kwargs).split("\n")
        return lines[1] if len(lines) > 1 else ""

    def test_help(self):
        """front door: every command's --help"""
        for command in cli.COMMANDS:
            lines = self.cli(command, "--help").rstrip("\n").split("\n")[:2]
            got = "".join(" ".join(line.split(" ")[:3]) + " " for line in lines)
            self.same("front door: %s --help" % command,
                      "0 usage: tools/blkctx %s " % command, got)

    def test_arguments(self):
        """front door: arguments refused (2) or accepted (0)"""
        os.makedirs(self.path("full"))
        open(self.path("full", "0001-keep.patch"), "w").close()
        new = self.path("new")
        for want, args in (
                ("2", "kunit foo"),
                ("2", "kunit x86_64 --forse"),
                ("2", "prepare --forse"),
                ("2", "prepare --forc"),
                ("2", "test now"),
                ("2", "build-each x86_64 arm"),
                ("2", "build-each riscv"),
                ("2", "mail"),
                ("2", "mail a b"),
                ("2", "mail %s" % self.path("full")),
                ("2", "mail --reroll=0 %s" % new),
                ("2", "mail --reroll=v2 %s" % new),
                ("2", "mail --from=nobody %s" % new),
                ("2", "kunit --reroll=2"),
                ("2", "nosuchcommand"),
                ("0", "kunit x86_64 arm"),
                ("0", "prepare --force"),
                ("0", "build-each --llvm arm"),
                ("0", "mail %s" % new),
                ("0", "mail --reroll=3 %s" % new),
                ("0", "help")):
            # named without the scratch path: the same name every run
            self.same("front door: %s" % args.replace(self.tmp, "T"), want,
                      self.first(*args.split()))

    def test_runs(self):
        """front door: what blkctx.sh is given"""
        new = self.path("new")
        for args, want in (
                ("kunit arm x86_64", "ran kunit arm x86_64"),
                ("prepare", "ran prepare"),
                ("build-each arm --llvm", "ran build-each --llvm arm"),
                ("mail --reroll 3 %s" % new, "ran mail --reroll=3 --from=%s %s" % (SENDER, new))):
            self.same("front door: %s runs %s" % (args.replace(self.tmp, "T"),
                                                  want.replace(self.tmp, "T")),
                      want, self.second(*args.split()))
        self.same("front door: mail --from= runs as that sender",
                  "ran mail --from=Other One <other@example.org> %s" % new,
                  self.second("mail", "--from=Other One <other@example.org>", new))
        self.same("front door: mail -- --reroll=5 (a DIR that looks like an option)", "2",
                  self.first("mail", "--", "--reroll=5"))
        self.same("front door: mail without a sender (no git identity, no --from)", "2",
                  self.first("mail", new, sender=None))
        self.same("front door: mail with the series' identity as git's", "2",
                  self.first("mail", new, sender="blkctx developers <devel@blkctx.invalid>"))

    def test_settings(self):
        """front door: the settings that are seconds, and bench's"""
        for want, setting, command in (
                ("2", "BLKCTX_GUEST_TIMEOUT=15m", "selftests"),
                ("2", "BLKCTX_GUEST_TIMEOUT=0", "demo"),
                ("2", "BLKCTX_GUEST_TEST_TIMEOUT=0", "selftests"),
                ("2", "BLKCTX_PROGRESS_SECONDS=1m", "kunit"),
                ("2", "BLKCTX_STOP_SECONDS=x", "test"),
                ("0", "BLKCTX_PROGRESS_SECONDS=", "kunit"),
                ("0", "BLKCTX_GUEST_TIMEOUT=30", "selftests"),
                ("2", "BLKCTX_BENCH_MAIN=2", "bench"),
                ("2", "BLKCTX_BENCH_REPEAT=2.5", "bench"),
                ("2", "BLKCTX_BENCH_SEEDS=0,1", "bench"),
                ("2", "BLKCTX_BENCH_WARMUP=1.25", "bench"),
                ("2", "BLKCTX_BENCH_GEOMETRIES=256", "bench"),
                ("2", "BLKCTX_BENCH_CONTEXT_IDS=16", "bench"),
                ("0", "BLKCTX_BENCH_GEOMETRIES=", "bench"),
                ("0", "BLKCTX_BENCH_DISCARD=1,0", "bench"),
                ("0", "BLKCTX_BENCH_MAIN=2", "kunit")):
            name, value = setting.split("=", 1)
            self.same("front door: %s %s" % (setting, command), want,
                      self.first(command, env={name: value}))

    def test_exec(self):
        """front door: blkctx.sh runs with the arguments, SIGPIPE and SIGXFSZ not ignored"""
        # blkctx.sh in cli.py's process, with SIGPIPE and SIGXFSZ at their
        # defaults again (Python ignores both, and exec keeps that), so that
        # a pipeline in the shell ends when its reader does
        self.write("cli-lib/blkctx.sh",
                   'echo "args $*"\nsed -n "s/^SigIgn:[[:space:]]*//p" /proc/$$/status\n')
        done = support.python("import sys, cli\ncli.LIB = sys.argv[1]\ncli.main(['setup'])",
                              self.path("cli-lib"), env={"BLKCTX_CACHE": self.path("cli-cache")})
        lines = done.out.split("\n") + ["", ""]
        try:
            mask = int(lines[1], 16)
            # bits 13 and 25 of the mask (from 1): SIGPIPE, SIGXFSZ
            got = "%s; %d %d" % (lines[0], mask >> 12 & 1, mask >> 24 & 1)
        except ValueError:
            got = done.out
        self.same("front door: blkctx.sh runs with the arguments, SIGPIPE and SIGXFSZ not "
                  "ignored", "args setup; 0 0", got)

    def test_closed_pipe(self):
        """front door: help into a closed pipe"""
        # a reader of help that stops early ends it as it ended bash: SIGPIPE,
        # no traceback
        done = support.python("import os, sys, cli\nr, w = os.pipe()\nos.close(r)\n"
                              "os.dup2(w, 1)\nsys.exit(cli.main(['help']))")
        self.same("front door: help into a closed pipe", "status 141",
                  "%sstatus %d" % (done.out, status(done.status)))

    def test_commands(self):
        """front door: cli.py's commands are blkctx.sh's and the Python ones"""
        # every command of cli.py's table is one of blkctx.sh's or one written
        # in Python, and no other (but for blkctx.sh's own: bootstrap, and
        # apt-ready for the Python); a set, as selfcheck is both for now
        main = support.bash("declare -f main", split=True).out
        shell = set(re.findall(r"^\s*([a-z][a-z-]*)\)$", main, re.M)) - {"bootstrap", "apt-ready"}
        self.same("front door: cli.py's commands are blkctx.sh's and the Python ones",
                  sorted(shell | set(cli.PYTHON_COMMANDS)), sorted(cli.COMMANDS))

    def test_blkctx(self):
        """front door: tools/blkctx help, by path and by name"""
        # tools/blkctx itself, called by its path or from tools/ by its name
        done = support.run(["bash", "-c", '"$1/tools/blkctx" help | head -1; '
                            'cd "$1/tools" && bash blkctx help | head -1', "bash", support.REPO],
                           split=True)
        self.same("front door: tools/blkctx help, by path and by name",
                  "usage: tools/blkctx COMMAND [ARGS]   (tools/blkctx COMMAND --help)\n" * 2,
                  done.out)

    def test_arches(self):
        """front door: one table of the architectures, read by both sides"""
        self.same("front door: cli.py and blkctx.sh know the same architectures",
                  support.bash('echo "$ARCHES"', split=True).out.rstrip("\n"),
                  " ".join(cli.ARCHES))
        self.same("setup: the cross compilers of tools/lib/arches",
                  "gcc-arm-linux-gnueabihf binutils-arm-linux-gnueabihf libc6-dev-armhf-cross",
                  support.bash("arch_packages", split=True).out.rstrip("\n"))


# a row of Bootstrap: in a subshell (without -e),
# PATH only the scratch bin/, a do_setup stub, and blkctx.sh's do_bootstrap
# with the arguments; its output, then its status
BOOTSTRAP = """set +e
t=$1 mode=$2 env=$3 args=$4 build=$5
rm -f "$t/bin/python3"
# shellcheck disable=SC2086
rc=$( (
    [ -z "$env" ] || export "${env?}"
    PATH=$t/bin BUILD=$build REPO=$t/repo
    do_setup() { echo "setup ran in the bootstrap"; }
    SC_SETUP=$mode do_bootstrap $args
) 2>&1 </dev/null
    echo "status $?")
printf '%s' "$rc"
"""


class Bootstrap(support.Case):
    """Where python3 is not installed yet (tools/blkctx runs blkctx.sh's
    bootstrap), setup runs alone or before test and demo, as a command of
    its own (here a stand-in blkctx.sh), and anything else, or a bad
    setting, is refused without doing anything."""

    def test_bootstrap(self):
        """bootstrap without python3"""
        t = self.path("bootstrap")
        os.makedirs(os.path.join(t, "bin"))
        for tool in ("rm", "chmod"):
            os.symlink(support.run(["bash", "-c", "command -v " + tool]).out.strip(),
                       os.path.join(t, "bin", tool))
        # the stand-in setup: fails, or installs a python3 that says it ran
        self.write("bootstrap/repo/tools/lib/blkctx.sh", """echo "setup ran: $*"
case $SC_SETUP in
fails) exit 1 ;;
installs) printf '#!/bin/sh\\necho python3 ran "$@"\\n' >"%s/bin/python3"
\tchmod +x "%s/bin/python3" ;;
esac
""" % (t, t))
        # how setup behaves, the environment, the arguments, what happens
        python3 = "blkctx: python3 is not installed: tools/blkctx setup (as root) installs it"
        first = "blkctx: %s: setup first, for the python3 that runs the rest setup ran: setup "
        for mode, env, args, want in (
                ("passes", "", "setup", "setup ran in the bootstrap status 0"),
                ("passes", "", "kunit --help", python3 + " status 2"),
                ("passes", "", "test --help", python3 + " status 2"),
                ("fails", "", "test", first % "test" + "total: 0 passed, 1 failed, 0 skipped "
                 "blkctx: test: FAILED: setup status 1"),
                ("passes", "", "demo", first % "demo" + "blkctx: demo: FAILED: setup status 1"),
                ("installs", "", "test", first % "test" + "python3 ran tools/lib/cli.py test "
                 "status 0"),
                ("installs", "BLKCTX_STOP_SECONDS=x", "test", "blkctx: test: "
                 'BLKCTX_STOP_SECONDS: whole seconds, more than 0 (not "x") status 2'),
                ("installs", "BLKCTX_GUEST_TIMEOUT=15m", "demo", "blkctx: demo: "
                 'BLKCTX_GUEST_TIMEOUT: whole seconds, more than 0 (not "15m") status 2'),
                ("installs", "BLKCTX_PROGRESS_SECONDS=0", "test", "blkctx: test: "
                 'BLKCTX_PROGRESS_SECONDS: whole seconds, more than 0 (not "0") status 2')):
            got = support.bash(BOOTSTRAP, t, mode, env, args, self.tmp).out
            got = got.replace(t + "/repo/", "").replace("\n", " ")
            self.same("bootstrap without python3: %s%s (setup %s)"
                      % (env + " " if env else "", args, mode), want, got)


# the BLKCTX_ variables read in the shell (not in comments), and in Python
# and qemu_configs/ through the environment or common's setting()
SHELL_READ = re.compile(r"\$\{?(BLKCTX_[A-Z_]+)")
PYTHON_READ = re.compile(r"""(?:env(?:iron)?(?:\.get\(|\[)|setting\()["'](BLKCTX_[A-Z_]+)""")


class EnvDoc(support.Case):
    """Every BLKCTX_ variable the tools (and qemu_configs/) read is in
    --help's list, and the list names no other."""

    def test_env_doc(self):
        """environment: --help lists every BLKCTX_ variable the tools read, and only those"""
        read = set()
        for path in [os.path.join(support.REPO, "tools", "blkctx")] + \
                sorted(glob.glob(os.path.join(support.LIB, "*.sh"))):
            with open(path) as f:
                for line in f:
                    if not re.match(r"\s*#", line):
                        read.update(SHELL_READ.findall(line))
        for path in sorted(glob.glob(os.path.join(support.REPO, "qemu_configs", "*.py")) +
                           glob.glob(os.path.join(support.LIB, "*.py"))):
            with open(path) as f:
                read.update(PYTHON_READ.findall(f.read()))
        read.discard("BLKCTX_CLEANUP")
        usage = support.run([sys.executable, "-B", os.path.join(support.LIB, "cli.py"), "help"],
                            split=True).out
        doc = set(re.findall(r"^  (BLKCTX_[A-Z_]*) ", usage, re.M))
        self.same("environment: --help lists every BLKCTX_ variable the tools read, and only "
                  "those", "",
                  "".join("read, not listed: %s\n" % v for v in sorted(read - doc)) +
                  "".join("listed, not read: %s\n" % v for v in sorted(doc - read)))


MAIL = """import glob, os, shutil, subprocess
sender = "Mail Tester <tester@example.org>"
tree.record()
def lines(pattern, *prefixes):
    for path in sorted(glob.glob(pattern)):
        for line in open(path).read().splitlines():
            if line.startswith(prefixes):
                print(line)
if run(tree.export) or run(tree.mail, sys.argv[2] + "/v1", sender):
    sys.exit(1)
print("v1 ok")
lines(sys.argv[2] + "/v1/0001-*.patch", "From: blkctx developers", "Signed-off-by:")
shutil.copytree(sys.argv[2] + "/v1", sys.argv[2] + "/bad")
path = glob.glob(sys.argv[2] + "/bad/0001-*.patch")[0]
text = open(path).read().replace("Signed-off-by: Mail Tester <tester@example.org>\\n", "")
open(path, "w").write(text)
if run(tree.mail_check, sys.argv[2] + "/bad", sender):
    print("bad refused")
if run(tree.mail, sys.argv[2] + "/v2", sender, 2):
    sys.exit(1)
lines(sys.argv[2] + "/v2/v2-000[01]-*.patch", "Subject: [PATCH v2 1/1]", "Range-diff against v1:")
lines(sys.argv[2] + "/v1/0000-*.patch", "To: ", "Cc: ")
# a relative DIR is the caller's, not the tree's
os.mkdir(sys.argv[2] + "/here")
os.chdir(sys.argv[2] + "/here")
if run(tree.mail, "out", sender):
    sys.exit(1)
print(len(glob.glob(sys.argv[2] + "/here/out/*.patch")))
# a directory that holds files is refused, and they are kept
if run(tree.mail, sys.argv[2] + "/v1", sender):
    print("full refused")
print(len(glob.glob(sys.argv[2] + "/v1/*.patch")))
"""


class Mail(support.Case):
    """mail: the sender signs off last; the check (b4 am, then every commit
    rebuilt) passes on what mail wrote and fails on a message without that
    sign-off; a reroll is numbered and compares with the version before."""

    def test_mail(self):
        """mail: the sender signs off last, b4 am gives back the commits, a reroll"""
        t = support.scratch_tree(self.path("mail"))
        # in a process: it changes the working directory, and mail exits
        done = support.tree_step(t, MAIL, t, split=True)
        self.same("mail: the sender signs off last, b4 am gives back the commits, a reroll",
                  """v1 ok
From: blkctx developers <devel@blkctx.invalid>
Signed-off-by: blkctx developers <devel@blkctx.invalid>
Signed-off-by: Mail Tester <tester@example.org>
bad refused
Range-diff against v1:
Subject: [PATCH v2 1/1] block: a change
To: Some Maintainer <maint@example.org>
Cc: list@example.org
2
full refused
2""", done.out.rstrip("\n"))

