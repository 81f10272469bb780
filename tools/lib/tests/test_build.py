# SPDX-License-Identifier: GPL-2.0
"""The builds that judge the series beyond its tests, on canned input and
stand-ins: the warnings command and build-each's kconfig checks
(build_step.py), a guest kernel's missing options (selftests_step.py),
checkpatch's judgement (checkpatch_step.py) and pahole's (pahole_step.py)."""

import contextlib
import io
import os
import re
import subprocess
import sys
from unittest import mock

import support

import build_step
import checkpatch_step
import common
import selftests_step


def step(top, code, *args):
    """python3 CODE ARGS with build_step imported, its cache
    a scratch one under TOP; its output (stderr with it), then "status N"
    when N is not 0."""
    done = support.python("import sys, build_step\n" + code, *args,
                          env={"BLKCTX_CACHE": os.path.join(top, "build-step")})
    return done.text()


# a make that warns for each object it builds
FAKE_MAKE = r"""tree=$1
shift
out=
for a; do case $a in O=*) out=${a#O=} ;; esac; done
for a; do
	case $a in
	*.o)
		[ ! -f "$out/$a" ] || continue
		echo "$tree/${a%.o}.c:3:1: warning: no previous prototype [-Wmissing-prototypes]"
		: >"$out/$a"
		;;
	esac
done
"""

# one architecture's verdict with each compiler: the builds stood in for
# (no warning), the objects those compiled by compile_division()
WARNINGS_ARCH = """import os
build_step.kunit_step.build_dir = lambda arch: sys.argv[1] + "/build/kunit-" + arch
build_step.pahole_step.ready = lambda arch, llvm=False: None
build_step.pahole_step.build_dir = lambda side, arch, llvm=False: sys.argv[1] + "/out"
build_step.pahole_step.pristine_worktree = lambda: "/pristine"
build_step.common.BUILD = sys.argv[1] + "/build"
def warning_build(arch, tree, out, log, objects, llvm=False):
    open(log, "w").close()
    return 0
build_step.warning_build = warning_build
for objects in (["nodiv.o"], ["nodiv.o", "div.o"]):
    build_step.touched_objects = lambda arch: objects
    for llvm in (False, True):
        print(*build_step.warnings_arch("arm", llvm))
# a patched build that fails with a compile error, as the pristine one
def failing(arch, tree, out, log, objects, llvm=False):
    open(log, "w").write("block/bio.c:1:1: error: x\\n")
    return 2
build_step.warning_build = failing
print(*build_step.warnings_arch("arm", True))
"""


class TestWarnings(support.Case):
    """A build that cannot measure warnings fails, and the
    objects are compiled on every run (a fake make prints a W=1 warning
    only when it compiles an object, as make does)."""

    def setUp(self):
        super().setUp()
        os.makedirs(self.path("tree", "block"))
        os.makedirs(self.path("out", "block"))
        self.write("tree/block/bio.c", "")

    def compile_division(self):
        """A u64 % u64 that arm32 leaves to libgcc (the kernel has no such
        helper), and a division that needs none, compiled into out/; what
        did not compile."""
        self.write("div.c", "unsigned long long f(unsigned long long a, "
                   "unsigned long long b) { return a % b; }\n")
        self.write("nodiv.c", "unsigned int g(unsigned int a) { return a / 3; }\n")
        said = ""
        for f in ("div", "nodiv"):
            if subprocess.run(["arm-linux-gnueabihf-gcc", "-O2", "-c", "-o",
                               self.path("out", f + ".o"), self.path(f + ".c")],
                              stdin=subprocess.DEVNULL).returncode != 0:
                said += "cannot compile %s.c\n" % f
        return said

    def test_broken(self):
        """warnings: a failed make is no measure unless an error explains it"""
        self.write("nosparse.log", "/bin/sh: 1: sparse: not found\n"
                   "make[3]: *** [scripts/Makefile.build:244: block/bio.o] Error 127\n")
        self.write("noerror.log", "make[1]: *** [Makefile:1989: block] Error 2\n")
        self.write("error.log", "block/bio.c:12:3: error: expected ; before }\n"
                   "make: *** [block/bio.o] Error 1\n")
        for what, log, status, want in (
                ("sparse missing fails", "nosparse", 2,
                 "a tool is missing: /bin/sh: 1: sparse: not found"),
                ("make failing with no error line fails", "noerror", 2,
                 "make exited with status 2, and no warning or error says why"),
                ("a compile error explains a failed make", "error", 1, "None"),
                ("a build that worked is compared", "noerror", 0, "None")):
            self.same("warnings: " + what, want,
                      str(build_step.warning_broken(self.path(log + ".log"), status)))

    def test_rerun(self):
        """warnings: every run compiles the objects again, so sees their warnings"""
        self.write("make", FAKE_MAKE)

        def make(arch, tree):
            return ["sh", self.path("make"), tree]

        for log in ("1.log", "2.log"):
            build_step.warning_build("x86_64", self.path("tree"), self.path("out"),
                                     self.path(log), ["block/bio.o", "block/new.o"], make)
        self.same("warnings: a second run sees the W=1 warning again, of files both trees have",
                  "block/bio.c: warning: no previous prototype [-Wmissing-prototypes]",
                  "\n".join(build_step.warning_lines(self.path("tree"), self.path("2.log"))))

    def test_missing_tools(self):
        """warnings: the command needs sparse and clang"""
        # in a process: run_command takes the signals, and the status is main's
        rc = "".join(step(self.tmp, """import shutil
shutil.which = lambda name: None if name == sys.argv[1] else "/usr/bin/" + name
print("status", build_step.main(["warnings", "x86_64"], lock=False))""", tool)
                     for tool in ("sparse", "clang"))
        self.same("warnings: without sparse or clang it fails, saying why",
                  "blkctx: error: sparse not found: run tools/blkctx setup\n"
                  "status 1\n"
                  "blkctx: error: clang not found: run tools/blkctx setup\n"
                  "status 1", rc.rstrip("\n"))

    def test_compilers(self):
        """warnings: the compilers, gcc with sparse, clang with the LLVM tools and without"""
        log = self.path("cc.log")
        rc = []
        for arch in ("x86_64", "arm"):
            for llvm in (False, True):
                build_step.warning_build(arch, self.path("tree"), "/o", log, ["block/bio.o"],
                                         lambda arch, tree: ["echo", "make"], llvm)
                with open(log) as f:
                    rc.append(f.read().split(" -k ")[0])
        self.same("warnings: gcc with sparse, clang without, for each architecture",
                  "make O=/o CC=ccache gcc KCFLAGS=-g W=1 C=2 CHECK=sparse\n"
                  "make O=/o LLVM=1 CC=ccache clang KCFLAGS=-g W=1\n"
                  "make O=/o CC=ccache arm-linux-gnueabihf-gcc KCFLAGS=-g W=1 C=2 CHECK=sparse\n"
                  "make O=/o LLVM=1 CC=ccache clang KCFLAGS=-g W=1", "\n".join(rc))

    def test_division(self):
        """warnings: calls to 64-bit division helpers, and objects nm cannot read"""
        rc = self.compile_division()
        # in a process: run_command takes the signals
        rc += step(self.tmp, """print(*build_step.division_helpers("arm", sys.argv[1],
                                                        ["div.o", "nodiv.o"]))
print(build_step.common.run_command("w", lambda: build_step.division_helpers(
    "arm", sys.argv[1], ["none.o"])))""", self.path("out"))
        rc = re.sub(r": nm cannot read .*", ": nm cannot read none.o", rc)
        self.same("warnings: a call to a 64-bit division helper is found; "
                  "an object nm cannot read fails",
                  "div.o: __aeabi_uldivmod\n"
                  "blkctx: error: warnings: nm cannot read none.o\n"
                  "1", rc.rstrip("\n"))

    def test_arch_verdict(self):
        """warnings: one architecture's verdict with each compiler"""
        rc = self.compile_division()
        self.write("build/kunit-arm/vmlinux", "")
        # in a process: it sets common.BUILD
        out = step(self.tmp, WARNINGS_ARCH, self.tmp)
        rc += "".join(line for line in out.splitlines(True)
                      if not line.startswith("blkctx: warnings: arm"))
        self.same("warnings: a 64-bit division helper or a failed build fails the "
                  "architecture, with either compiler",
                  "warnings: arm gcc: no new W=1 and sparse warnings, no 64-bit division "
                  "helper, in nodiv.o True\n"
                  "warnings: arm clang: no new W=1 warnings, no 64-bit division helper, "
                  "in nodiv.o True\n"
                  "warnings: arm gcc: calls to 64-bit division helpers the kernel does not "
                  "have (use div_u64() and friends):\n"
                  "    div.o: __aeabi_uldivmod False\n"
                  "warnings: arm clang: calls to 64-bit division helpers the kernel does not "
                  "have (use div_u64() and friends):\n"
                  "    div.o: __aeabi_uldivmod False\n"
                  "block/bio.c:1:1: error: x\n"
                  "warnings: arm clang: the pristine build failed: a compile error (see "
                  "above): FAILED False", rc.rstrip("\n"))

    def test_command(self):
        """warnings: the command judges each architecture with gcc and with clang"""
        def verdict(arch, llvm=False):
            return "%s %s" % (arch, "clang" if llvm else "gcc"), not (arch == "arm" and llvm)

        said = io.StringIO()
        with mock.patch("shutil.which", lambda name: "/usr/bin/" + name), \
                mock.patch.object(build_step.common, "tree_current", lambda: None), \
                mock.patch.object(build_step, "warnings_arch", verdict), \
                contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            status = build_step.command_warnings([])
        # failed when one is
        self.same("warnings: every architecture with gcc and with clang",
                  "x86_64 gcc\nx86_64 clang\narm gcc\narm clang\nstatus 1",
                  said.getvalue() + "status %d" % status)


class TestKconfig(support.Case):
    """The kunitconfig lines whose symbol a commit has must
    hold (build-each), and a guest kernel's missing options (selftests)."""

    def test_unmet(self):
        """build-each: the kunitconfig lines whose symbol a commit has must hold"""
        self.write("tree/drivers/Kconfig", 'config FOO\n\tbool "foo"\nmenuconfig BAR\n'
                   '\tbool "bar"\nconfig NOPE\n\tbool "nope"\n')
        self.write("want", "CONFIG_FOO=y\nCONFIG_BAR=y\nCONFIG_LATER=y\nCONFIG_NOPE=n\n"
                   "# a comment\n")
        self.write("config", "CONFIG_FOO=y\n# CONFIG_BAR is not set\nCONFIG_NOPE=m\n")
        for args in (["init", "-q"], ["add", "-A"]):
            subprocess.run(["git", "-C", self.path("tree")] + args, check=True,
                           stdin=subprocess.DEVNULL)
        with open(self.path("want")) as f:
            want = f.read().splitlines()
        self.same("build-each: a symbol that exists but is off, one that is on but must not be",
                  "CONFIG_BAR=y CONFIG_NOPE=n",
                  " ".join(build_step.kconfig_unmet(
                      want, self.path("config"), build_step.kconfig_symbols(self.path("tree")))))

    def test_want(self):
        """build-each: kunitconfig's and qemu_configs' lines as kconfig_unmet compares them"""
        # whole lines of a .config, without the Python string's closing quotes
        bad = [line for arch in common.ARCHES for line in build_step.kunit_want(arch)
               if not re.fullmatch(r'CONFIG_[A-Za-z0-9_]+=([ynm]|[0-9]+|"[^"]*")', line)]
        self.same("build-each: what kunitconfig and qemu_configs want", "", "".join(bad))
        self.same("build-each: qemu_configs' last line is read", "CONFIG_ARM_PSCI=y",
                  build_step.kunit_want("arm")[-1])

    def test_guest(self):
        """selftests: the guests' own check, on a kernel with all they need but two"""
        self.write("target/config", "CONFIG_MMC=y\nCONFIG_MD=y\n# a comment\n")
        lines = []
        for a in selftests_step.GUEST_KCONFIG + common.ARCHES["x86_64"].kconfig:
            if a == "DEBUG_FS":
                lines.append("# CONFIG_DEBUG_FS is not set")
            elif a != "SERIAL_8250_CONSOLE":
                lines.append("CONFIG_%s=y" % a)
        lines += ["CONFIG_MMC=y", "CONFIG_MD=m"]
        self.write("guest.config", "\n".join(lines) + "\n")
        self.same("selftests: the options a guest and its targets need, missing from a kernel",
                  "CONFIG_DEBUG_FS=y CONFIG_SERIAL_8250_CONSOLE=y CONFIG_MD=y",
                  " ".join(selftests_step.missing_kconfig(self.path("guest.config"), "x86_64",
                                                          [self.path("target")])))


class TestUpstreamCommits(support.Case):
    """A Fixes: tag the tree cannot look up passes
    only with the id and subject tools/upstream-commits.txt lists."""

    def test_known(self):
        """checkpatch: only a listed commit id with its subject passes"""
        patch = self.path("fixes.patch")
        rc = []
        for tag in (
                'Fixes: 406e14808ee6 ("mmc: block: Remove error check of hw_reset on reset")',
                'Fixes: 406e14808ee7 ("mmc: block: Remove error check of hw_reset on reset")',
                'Fixes: 406e14808ee6 ("mmc: block: Remove error check")',
                'Fixes: 406e14808ee6 ("mmc: block: Remove error check of hw_reset on reset")'
                ' and more'):
            self.write("fixes.patch", "Subject: [PATCH] a fix\n\n%s\n" % tag)
            rc.append("known" if checkpatch_step.upstream_commit_known(patch, tag[7:19])
                      else "unknown")
        self.same("checkpatch: only a listed commit id with its subject passes",
                  "known\nunknown\nunknown\nunknown", "\n".join(rc))


# prints what the patch file holds after "OUT:" and exits with its "RC:"
FAKE_CHECKPATCH = r"""my $f = $ARGV[-1];
open(my $fh, '<', $f) or die;
my $rc = 0;
while (<$fh>) {
	$rc = $1 if /^RC: (\d+)/;
	print $1, "\n" if /^OUT: (.*)/;
}
exit $rc;
"""

FIXES = 'Fixes: 406e14808ee6 ("mmc: block: Remove error check of hw_reset on reset")'
UNKNOWN = ("OUT: WARNING:UNKNOWN_COMMIT_ID: Unknown commit id '406e14808ee6', "
           "maybe rebased or not pulled?")
CAMEL_OPT = "OUT: CHECK:CAMELCASE: Avoid CamelCase: <Opt_context_policy>"
UNLISTED = 'Fixes: 406e14808ee6 ("another subject")'

# a patch file's lines, and the verdict
CHECKPATCH_CASES = (
    ("clean", ["RC: 0"], "pass"),
    ("allowed", [FIXES, "RC: 1", UNKNOWN, CAMEL_OPT,
                 "OUT: total: 0 errors, 1 warnings, 1 checks"], "pass"),
    ("camel", ["RC: 1", "OUT: CHECK:CAMELCASE: Avoid CamelCase: <ContextPolicy>"], "fail"),
    ("fixes-plus", [FIXES, "RC: 1", UNKNOWN,
                    "OUT: WARNING:LONG_LINE: line length of 101 exceeds 100 columns"], "fail"),
    ("unlisted", [UNLISTED, "RC: 1", UNKNOWN], "fail"),
    ("crashed", ["RC: 2", "OUT: Traceback (most recent call last):"], "fail"),
    ("unlisted-plus", [UNLISTED, "RC: 1", UNKNOWN, CAMEL_OPT], "fail"),
    ("camel-opt", ["RC: 1", "OUT: CHECK:CAMELCASE: Avoid CamelCase: <Opt_contextPolicy>"],
     "fail"),
)


class TestCheckpatchJudge(support.Case):
    """One checkpatch run whose typed findings are
    judged: only ext4's Opt_ CamelCase and a listed upstream commit id are
    let through, and a checkpatch that fails with no finding fails (a fake
    checkpatch.pl prints what each patch file holds after "OUT:" and exits
    with its "RC:")."""

    def test_judge(self):
        """checkpatch judged: each finding let through or not"""
        self.write("tree/scripts/checkpatch.pl", FAKE_CHECKPATCH)
        for name, lines, want in CHECKPATCH_CASES:
            patch = self.write(name + ".patch", "\n".join(lines) + "\n")
            # the command's exit status: a process of its own
            done = support.run([sys.executable, "-B",
                                os.path.join(support.LIB, "checkpatch_step.py"), "judge",
                                self.path("tree"), patch])
            self.same("checkpatch judged: " + name, want, "pass" if done.status == 0 else "fail")


# prints a size by the object's name: 136 for same.o and old.o, 144 for
# grown.o, nothing for gone.o
FAKE_PAHOLE = (
    "#!/bin/sh\n"
    "case $3 in\n"
    r"*/same.o | */old.o) printf 'struct bio {\n\tint x;\n"
    r"\t/* size: 136, cachelines: 3, members: 20 */\n};\n' ;;" "\n"
    r"*/grown.o) printf 'struct bio {\n\t/* size: 144, cachelines: 3, members: 21 */\n};\n' ;;"
    "\n"
    "esac\n")

COMPARE = """import sys, pahole_step
line, ok = pahole_step.compare("x86_64", "bio", pahole_step.size("bio", [sys.argv[1]]),
                               pahole_step.size("bio", [sys.argv[2]]))
print(line.split(": ", 2)[2], ok)
"""


class TestPaholeJudge(support.Case):
    """The size pahole prints, and the judgement: the same
    size passes, a grown struct or one pahole cannot find fails."""

    def test_judge(self):
        """pahole judged: the sizes of a fake pahole compared"""
        self.write("bin/pahole", FAKE_PAHOLE, 0o755)
        for name in ("same", "old", "grown", "gone"):
            self.write(name + ".o", "")
        # the fake pahole first on PATH: a process of its own
        env = {"PATH": self.path("bin") + ":" + os.environ["PATH"]}
        for pristine, patched, want in (
                ("old.o", "same.o", "136 bytes, as in the pristine tree True"),
                ("old.o", "grown.o", "144 bytes, pristine 136: FAILED False"),
                ("old.o", "gone.o", "? bytes, pristine 136: FAILED False"),
                ("gone.o", "gone.o", "? bytes, pristine ?: FAILED False")):
            done = support.python(COMPARE, self.path(pristine), self.path(patched), env=env)
            self.same("pahole judged: %s against %s" % (pristine, patched), want,
                      done.out.rstrip("\n"))
        done = support.run([sys.executable, "-B", os.path.join(support.LIB, "pahole_step.py"),
                            "size", "bio", self.path("gone.o"), self.path("missing.o"),
                            self.path("old.o"), self.path("grown.o")], env=env, split=True)
        self.same("pahole: the first object that has the struct", "136", done.out.rstrip("\n"))

