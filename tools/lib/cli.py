#!/usr/bin/env python3
"""The front door of tools/blkctx: every command with its arguments, what it
does and the environment it reads, in one table each. A command's arguments
and settings are checked here before anything is done (a mistake exits 2
with the usage); then the command runs in this process: those of
PYTHON_COMMANDS in Python (tools/lib/*_step.py), the others in
tools/lib/blkctx.sh (exec), with the arguments in one form (--reroll=N,
--from=IDENT). The architectures are tools/lib/common.py's."""

import argparse
import importlib
import os
import re
import signal
import subprocess
import sys

sys.dont_write_bytecode = True

# after the line above: the modules of tools/lib write no bytecode
import common  # noqa: E402

LIB = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(LIB))
PROG = "tools/blkctx"
SERIES_EMAIL = "devel@blkctx.invalid"


# the architectures' names, from the table blkctx.sh reads too
ARCHES = list(common.ARCHES)
ARCH_LIST = " ".join(ARCHES)

# Every command: its name, what it does in one line (its summary in "help"),
# then more if there is more. Its arguments: add_arguments below.
COMMANDS = {
    "setup": "install every dependency from Debian's packages (needs root)",
    "prepare": """make the kernel tree: pristine 6.12 plus one commit per patch
in $BLKCTX_CACHE/linux; it refuses to drop commits that are not exported
(--force drops them)""",
    "export": """write the tree's commits back into series/, kunit/, selftests/
it refuses when those files changed since the tree took them (--force
replaces them with the tree's commits all the same)""",
    "patches": "list the patch files in the order git am takes them",
    "reorder": "squash fixup! commits, order commits series, kunit, selftests",
    "kunit": f"run every KUnit suite with kunit.py (default: {ARCH_LIST})",
    "selftests": f"""run the kselftests in QEMU guests on the KUnit kernel
with the emulated card's contexts and without them (default: {ARCH_LIST})""",
    "checkpatch": "run checkpatch.pl --strict on every patch",
    "build-each": """build the tree at every patch of the series
(default: x86_64), with the KUnit config made afresh at each; --llvm builds
with LLVM=1""",
    "pahole": "compare struct bio and struct request sizes with the pristine tree",
    "warnings": """fail on W=1 or sparse warnings the series adds to files it touches
W=1 with gcc and with clang (LLVM=1), sparse with gcc, pristine against
patched on each architecture; a call to a 64-bit division helper that the
kernel does not link (__aeabi_uldivmod and the like) fails too""",
    "mail": """write the series as mail from you into DIR, checked with b4
DIR is new or empty. The mail: a cover letter, To/Cc from get_maintainer.pl,
your Signed-off-by after the stored one (your git user.name and user.email,
or --from="Name <address>"); --reroll=N makes it vN, with a range-diff to
vN-1 when that was mailed from this tree. The check: b4 am gives back every
commit as it is in the tree""",
    "mail-check": "mail from a test sender into a temporary directory, and its check",
    "test": """every test on every architecture, with one closing total
setup, prepare, selfcheck, then every test; ends with a line "total: N
passed, N failed, N skipped" and writes the same results, step by step, as
JSON in the cache's build/test-results.json""",
    "demo": """boot the patched kernel: which context each file's writes landed in
setup and prepare first""",
    "bench": "the context policy benchmark: tables, plots and parameters in one results file",
    "bench-check": """a short benchmark run: a new card per run, the replay exact
ftlreplay on the host on small logs (canned or made), then db and phone
under none and inode in the guest, one seed. Checks that each run starts
from a new card and that replaying the card's log gives its counts
exactly; prints the runs with their limit""",
    "selfcheck": "unittest and shellcheck tests of the tools themselves, on canned input (a minute)",
}

# Every environment variable the tools read, documented here only: name, the
# commands that read it ("*": every one that uses the cache, "build": every
# one that builds or boots, "-": set by the tools for themselves), and what
# it does [default]. "help" lists them all, COMMAND --help those of COMMAND.
BUILD_COMMANDS = "prepare kunit selftests build-each pahole warnings test demo bench bench-check"
NO_CACHE = ("setup", "patches", "selfcheck")
ENVIRONMENT = [
    ("BLKCTX_CACHE", "*", "the kernel tree, builds, guests, ccache and the lock [$XDG_CACHE_HOME/blkctx, or ~/.cache/blkctx]"),
    ("XDG_CACHE_HOME", "*", "where BLKCTX_CACHE goes when it is not set [~/.cache]"),
    ("BLKCTX_TARBALL", "prepare build", "Debian's source tarball [/usr/src/linux-source-6.12.tar.xz]"),
    ("BLKCTX_JOBS", "build", "make's -j [the number of CPUs]"),
    ("BLKCTX_PROGRESS_SECONDS", "build", "how often builds and boots say how far they are [60]"),
    ("BLKCTX_STOP_SECONDS", "selftests demo bench bench-check test", "seconds a guest, or a step of test, has after an interrupt or its timeout before it is killed [10]"),
    ("CCACHE_DIR", "build", "ccache's directory [$BLKCTX_CACHE/ccache]"),
    ("TMPDIR", "*", "temporary files [/tmp]"),
    ("CI", "test", "true: prepare --force, so that the patch files are tested whatever the tree holds"),
    ("BLKCTX_KVM", "kunit test", "1: the x86_64 KUnit run asks for KVM first (qemu_configs/x86_64.py); kselftest guests never [plain emulation]"),
    ("BLKCTX_SELFTEST_TARGETS", "selftests test", "kselftest targets: NAME of tools/testing/selftests, NAME=DIR or DIR outside the tree [block mmc]"),
    ("BLKCTX_SELFTESTS", "selftests test demo bench bench-check", "only these tests: collection, collection:test or globs, comma-separated; in every guest booted, instead of its own [all]"),
    ("BLKCTX_GUESTS", "selftests test", "only these guests, comma-separated: main (every test, contexts on) or a name of GUESTS in tools/lib/selftests_step.py [all]"),
    ("BLKCTX_GUEST_BUILD", "selftests test demo", "boot the kernel built in $BLKCTX_CACHE/build/NAME-ARCH [kunit]"),
    ("BLKCTX_GUEST_CONTEXTS", "selftests test demo bench bench-check", "mmc_core.contexts= for the guests that do not set it [1]"),
    ("BLKCTX_GUEST_APPEND", "selftests test demo bench bench-check", "more kernel command line for every guest []"),
    ("BLKCTX_GUEST_TIMEOUT", "selftests demo bench bench-check test", "whole seconds a guest may run, more than 0 [900; bench 7200]"),
    ("BLKCTX_GUEST_TEST_TIMEOUT", "selftests demo bench bench-check test", "whole seconds a test without a settings file may run, more than 0 [120]"),
    ("BLKCTX_BENCH_WORKLOADS", "bench", "workloads [mail,db,mix,phone,seq]"),
    ("BLKCTX_BENCH_POLICIES", "bench", "policies [none,inode,parent,process,temporal,size,create,hint,lifetime]"),
    ("BLKCTX_BENCH_JOURNAL", "bench", "1: also each policy with journal_context [1]"),
    ("BLKCTX_BENCH_WAF", "bench", "1: the write amplification tables [1]"),
    ("BLKCTX_BENCH_REQUESTS", "bench", "1: the request counts against pristine 6.12 [1]"),
    ("BLKCTX_BENCH_REPEAT", "bench", "runs of each kernel for the request counts [3]"),
    ("BLKCTX_BENCH_CARD", "bench bench-check test", "card size in MiB [64]"),
    ("BLKCTX_BENCH_BLOCK", "bench bench-check test", "erase block in KiB [256]"),
    ("BLKCTX_BENCH_OP", "bench bench-check test", "spare (over-provisioning) in percent [7]"),
    ("BLKCTX_BENCH_FILL", "bench bench-check test", "percent of the filesystem kept in use [80]"),
    ("BLKCTX_BENCH_SEEDS", "bench bench-check test", "seeds, each run once per seed; tables give the spread [1,2,3]"),
    ("BLKCTX_BENCH_DISCARD", "bench", "1: mount -o discard; 0: without; 1,0: a table of each (other cards: the first only) [1,0]"),
    ("BLKCTX_BENCH_MAIN", "bench", "1: the default card's tables; 0: only the other cards [1]"),
    ("BLKCTX_BENCH_ISOLATION", "bench", "1: the first seed again in reverse order [1]"),
    ("BLKCTX_BENCH_GEOMETRIES", "bench", "other cards, erase block KiB:spare percent; empty: none [256:14,256:28,128:7,512:14]"),
    ("BLKCTX_BENCH_CONTEXT_IDS", "bench", "the default card with only this many contexts, space-separated; empty: none [4]"),
    ("BLKCTX_BENCH_SWEEP_POLICIES", "bench", "policies on the other cards [none,inode]"),
    ("BLKCTX_BENCH_SWEEP_WORKLOADS", "bench", "workloads on the other cards [mail,db,mix,phone]"),
    ("BLKCTX_BENCH_NONE_FROM", "bench", "an earlier run's BLKCTX_BENCH_OUT: where SWEEP_POLICIES has no none, none's runs from its boot of the same card, as if in this one []"),
    ("BLKCTX_BENCH_WARMUP", "bench", "writes before counting, in card sizes [2]"),
    ("BLKCTX_BENCH_VOLUME", "bench", "writes counted, in card sizes [2]"),
    ("BLKCTX_BENCH_OUT", "bench", "where results.md, the tables and plots go [$BLKCTX_CACHE/build/bench]"),
    ("BLKCTX_RESULTS", "-", "set by test for its steps: the file each step adds its counts to"),
    ("BLKCTX_LOCK_FD", "-", "set by test for its steps: the descriptor that holds the cache's lock"),
    ("BLKCTX_SELF", "-", "selfcheck: the tools/blkctx that test runs its steps with"),
]
# the settings that are seconds: whole, more than 0 (empty is unset)
SECONDS = ("BLKCTX_GUEST_TIMEOUT", "BLKCTX_GUEST_TEST_TIMEOUT", "BLKCTX_PROGRESS_SECONDS",
           "BLKCTX_STOP_SECONDS")


def environment_help(command=None):
    """The variables COMMAND reads (all of them without COMMAND)."""
    lines = ["Environment%s:" % (" (%s)" % command if command else "")]
    for name, commands, text in ENVIRONMENT:
        if command and commands != "*" and \
                command not in commands.replace("build", BUILD_COMMANDS).split():
            continue
        lines.append("  %-28s %s" % (name, text))
    return "\n".join(lines)


def reroll(value):
    if not re.fullmatch(r"[1-9][0-9]?", value):
        raise argparse.ArgumentTypeError(
            "--reroll takes a version from 1 to 99 (%s)" % value)
    return int(value)


def mail_sender(ident):
    """IDENT if it is "Name <address>" of a person: the series' own
    identity cannot sign off."""
    if ident and "<%s>" % SERIES_EMAIL not in ident and \
            re.fullmatch(r".+ <.+@.+>", ident):
        return ident
    return None


def sender_argument(value):
    if not mail_sender(value):
        raise argparse.ArgumentTypeError(
            "--from takes \"Name <address>\", not the series' own identity (%s)" % value)
    return value


def mail_directory(value):
    """DIR, if it is new or an empty directory: mail never overwrites."""
    if not value or value.startswith("-"):
        raise argparse.ArgumentTypeError("DIR is empty or begins with - (%s)" % value)
    try:
        usable = not os.path.exists(value) or (os.path.isdir(value) and not os.listdir(value))
    except OSError as error:
        raise argparse.ArgumentTypeError("%s: %s" % (value, error.strerror))
    if not usable:
        raise argparse.ArgumentTypeError(
            "%s is not a new or empty directory: mail never overwrites" % value)
    return value


def git_sender():
    """The git identity of the person who runs mail, never guessed from the
    host's name; None when git has none."""
    try:
        ident = subprocess.run(
            ["git", "-C", REPO, "-c", "user.useConfigOnly=true", "var", "GIT_COMMITTER_IDENT"],
            capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    # drop the date git adds: "Name <address> 1733000000 +0000"
    return mail_sender(re.sub(r" [0-9]+ [-+][0-9]+$", "", ident))


def add_arguments(command, parser):
    """COMMAND's arguments; returns how to give them to blkctx.sh."""
    if command == "prepare":
        parser.add_argument("--force", action="store_true",
                            help="drop commits of the tree that are not exported")
        return lambda args: ["--force"] if args.force else []
    if command == "export":
        parser.add_argument("--force", action="store_true",
                            help="overwrite files changed since the tree took them")
        return lambda args: ["--force"] if args.force else []
    if command in ("kunit", "selftests", "pahole", "warnings"):
        parser.add_argument("arch", nargs="*", type=common.arch_name, metavar="ARCH",
                            help="%s (default: all of them)" % ARCH_LIST)
        return lambda args: args.arch
    if command == "build-each":
        parser.add_argument("--llvm", action="store_true", help="build with LLVM=1")
        parser.add_argument("arch", nargs="?", type=common.arch_name, metavar="ARCH",
                            help="%s (default: x86_64)" % ARCH_LIST)
        return lambda args: (["--llvm"] if args.llvm else []) + ([args.arch] if args.arch else [])
    if command == "mail":
        parser.add_argument("--reroll", type=reroll, default=1, metavar="N",
                            help="version N of the series (1 to 99)")
        parser.add_argument("--from", dest="sender", type=sender_argument, metavar="IDENT",
                            help='"Name <address>" [your git identity]')
        parser.add_argument("dir", type=mail_directory, metavar="DIR",
                            help="where the mail goes: a new or empty directory")
        return lambda args: (["--reroll=%d" % args.reroll] if args.reroll > 1 else []) + \
            ["--from=" + args.sender, args.dir]
    if command == "selfcheck":
        parser.add_argument("match", nargs="*", metavar="MATCH",
                            help="only the tests whose id has one of these (test_tree, a class, a method)")
        return lambda args: args.match
    return lambda args: []


def command_parser(command):
    parser = argparse.ArgumentParser(
        prog="%s %s" % (PROG, command), allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=COMMANDS[command],
        epilog=None if command in NO_CACHE else environment_help(command))
    return parser, add_arguments(command, parser)


def usage():
    lines = ["usage: %s COMMAND [ARGS]   (%s COMMAND --help)" % (PROG, PROG), ""]
    for command, text in COMMANDS.items():
        parser, _ = command_parser(command)
        arguments = parser.format_usage().split(command, 1)[1].replace("[-h]", "").split()
        call = " ".join([command] + arguments)
        summary = text.split("\n")[0]
        if len(call) > 22:
            lines += ["  " + call, "  %-22s %s" % ("", summary)]
        else:
            lines.append("  %-22s %s" % (call, summary))
    return "\n".join(lines + ["", environment_help()])


# bench's settings that have a form (empty: the default, or none for
# GEOMETRIES and CONTEXT_IDS): name, the form, the form in words
BENCH_SETTINGS = (
    ("BLKCTX_BENCH_WARMUP", r"[0-9]+(\.[0-9])?", "card sizes like 2 or 2.5"),
    ("BLKCTX_BENCH_VOLUME", r"[0-9]+(\.[0-9])?", "card sizes like 2 or 2.5"),
    ("BLKCTX_BENCH_DISCARD", r"[01](,[01])*", "1, 0 or 1,0"),
    ("BLKCTX_BENCH_MAIN", r"[01]", "1 or 0"),
    ("BLKCTX_BENCH_REPEAT", r"[1-9][0-9]*", "a whole number of runs, 1 or more"),
    ("BLKCTX_BENCH_SEEDS", r"[1-9][0-9]*(,[1-9][0-9]*)*", "seeds like 1,2,3"),
    ("BLKCTX_BENCH_GEOMETRIES", r"[0-9]+:[0-9]+(,[0-9]+:[0-9]+)*",
     "erase block KiB:spare percent pairs like 256:14,128:7"),
    ("BLKCTX_BENCH_CONTEXT_IDS", r"([1-9]|1[0-5])( ([1-9]|1[0-5]))*",
     "numbers 1..15, space-separated"),
)


def check_environment(parser, command):
    for name in SECONDS:
        value = os.environ.get(name, "")
        if value and not re.fullmatch(r"[1-9][0-9]*", value):
            parser.error('%s: whole seconds, more than 0 (not "%s")' % (name, value))
    if command != "bench":
        return
    for name, form, words in BENCH_SETTINGS:
        value = os.environ.get(name, "")
        if value and not re.fullmatch(form, value):
            parser.error('%s: %s (not "%s")' % (name, words, value))


# the commands written in Python: their modules in tools/lib
PYTHON_COMMANDS = {"kunit": "kunit_step", "checkpatch": "checkpatch_step",
                   "pahole": "pahole_step", "build-each": "build_step",
                   "warnings": "build_step", "prepare": "tree_step", "export": "tree_step",
                   "reorder": "tree_step", "mail": "tree_step", "mail-check": "tree_step",
                   "patches": "tree_step", "test": "runner", "selftests": "selftests_step",
                   "demo": "selftests_step", "bench": "bench_step", "bench-check": "bench_step",
                   "selfcheck": "selfcheck"}


def run(argv):
    """Run the command ARGV[0] with its arguments in this process: those
    of PYTHON_COMMANDS in Python, the others in blkctx.sh."""
    if argv[0] in PYTHON_COMMANDS:
        return importlib.import_module(PYTHON_COMMANDS[argv[0]]).main(argv)
    sys.stdout.flush()
    bash = os.path.join(LIB, "blkctx.sh")
    os.execvp("bash", ["bash", bash] + argv)


def main(argv, run=run):
    # Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored
    # across exec: the defaults back, for blkctx.sh's pipelines and for a
    # reader of "help" that stops early
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    if not argv or argv[0] in ("help", "-h", "--help"):
        print(usage())
        return 0
    command = argv[0]
    if command not in COMMANDS:
        print("blkctx: unknown command: %s\n%s" % (command, usage()), file=sys.stderr)
        return 2
    parser, blkctx_arguments = command_parser(command)
    args = parser.parse_args(argv[1:])
    if command == "mail" and not args.sender:
        args.sender = git_sender()
        if not args.sender:
            parser.error('who sends? set git\'s user.name and user.email, or pass --from="Name <address>"')
    check_environment(parser, command)
    return run([command] + blkctx_arguments(args))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
